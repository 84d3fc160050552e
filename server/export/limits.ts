/** Bounds and fixed values of the audit exports, each with why it is what it is. */
export const exportLimits = {
  /** Spans in one OTLP/HTTP request: a collector's default batch is 512 and its body limit a few MiB; 100 receipts with their events stay far below both. */
  otlpSpansPerRequestMax: 100,
  /** A receiver that has not answered one request in this long is down, not slow; the export stops and says so. */
  otlpRequestTimeoutMs: 10_000,
  /** Hex characters of an entry hash kept in a record id: 96 bits name one entry among billions without a collision in practice, and the id fits CEF's 40-character externalId. */
  recordIdHashHexChars: 24,
  /** Receipts that do not verify named one by one on standard error; the rest are counted (each row says why anyway), so a broken journal cannot fill memory with reasons. */
  unverifiedNamedMax: 20,
  /** Entries of one chain put in one receipt: far above any real chain (a few dozen entries); beyond it the journal is not ours to trust and the export stops. */
  chainEntriesMax: 100_000,
} as const;

/** How the export command exits: 0 done, 2 done but some receipt does not verify, 1 a destination or the journal failed, 64 bad arguments (EX_USAGE), 66 no journal or key to read (EX_NOINPUT). */
export const EXIT_CODES = { ok: 0, failed: 1, unverified: 2, usage: 64, noInput: 66 } as const;
/** One exit code of the export command. */
export type ExitCode = (typeof EXIT_CODES)[keyof typeof EXIT_CODES];

/** The product version exporters name (CEF's device version, OTLP's service.version): the version of the export's record shapes. */
export const EXPORT_VERSION = '1.0';
