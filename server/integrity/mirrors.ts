import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { type MirrorConfig, mirrorName } from '../config/integrity.ts';

// Where copies of the checkpoints go, out of reach of someone who can write the data folder: a
// file each checkpoint is appended to (make it append-only, `chattr +a`, or owned by another
// user with a group that may only append), or a URL each checkpoint is PUT to and the latest is
// read back from with GET. A mirror holds the latest checkpoint it was given; start-up reads it
// back and refuses a journal behind it.

/** How long a URL mirror may take to answer before it counts as unreachable. */
const URL_TIMEOUT_MS = 5_000;
/** A checkpoint note is a few hundred bytes; a mirror answering more is not one. */
const NOTE_BYTES_MAX = 16 * 1024;

/** A mirror could not be read or written: start-up warns, and the next checkpoint tries again. */
export class MirrorUnreachableError extends Error {}

export interface Mirror {
  /** Its path or URL (without credentials), for logs. */
  readonly name: string;
  /** The latest checkpoint note it holds, null when it holds none yet. */
  latest(): Promise<string | null>;
  /** Give it a checkpoint note. */
  put(note: string): Promise<void>;
}

export function openMirror(config: MirrorConfig): Mirror {
  return config.kind === 'file' ? new FileMirror(config.path) : new UrlMirror(config.url, config.token);
}

/** One JSON line a checkpoint, appended: an append-only file keeps every checkpoint it was given. */
class FileMirror implements Mirror {
  readonly name: string;

  constructor(private readonly path: string) {
    this.name = mirrorName({ kind: 'file', path });
  }

  async latest(): Promise<string | null> {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (error) {
      if (error instanceof Error && 'code' in error && error.code === 'ENOENT') return null;
      throw new MirrorUnreachableError(`cannot read ${this.name}: ${error instanceof Error ? error.message : String(error)}`);
    }
    // A line cut short by a crash mid-append is skipped: the one before it is the latest whole one.
    const lines = text.split('\n').filter((line) => line.trim() !== '');
    for (let i = lines.length - 1; i >= 0; i--) {
      try {
        const parsed: unknown = JSON.parse(lines[i] ?? '');
        if (typeof parsed === 'object' && parsed !== null && 'note' in parsed && typeof parsed.note === 'string') return parsed.note;
      } catch {
        // Not a whole line.
      }
    }
    return null;
  }

  async put(note: string): Promise<void> {
    try {
      mkdirSync(dirname(this.path), { recursive: true });
      // One write with O_APPEND: appended whole, after whatever is there.
      appendFileSync(this.path, `${JSON.stringify({ note })}\n`, { mode: 0o644 });
    } catch (error) {
      throw new MirrorUnreachableError(`cannot append to ${this.name}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}

/** PUT the note as text/plain; GET answers the latest (404 for none yet). */
class UrlMirror implements Mirror {
  readonly name: string;

  constructor(
    private readonly url: string,
    private readonly token: string | null,
  ) {
    this.name = mirrorName({ kind: 'url', url, token });
  }

  private headers(): Record<string, string> {
    return this.token === null ? {} : { authorization: `Bearer ${this.token}` };
  }

  async latest(): Promise<string | null> {
    const response = await this.call('GET');
    if (response.status === 404) return null;
    if (!response.ok) throw new MirrorUnreachableError(`${this.name} answered ${response.status} to GET`);
    const text = await response.text();
    if (Buffer.byteLength(text) > NOTE_BYTES_MAX) throw new MirrorUnreachableError(`${this.name} answered more than ${NOTE_BYTES_MAX} bytes`);
    return text;
  }

  async put(note: string): Promise<void> {
    const response = await this.call('PUT', note);
    if (!response.ok) throw new MirrorUnreachableError(`${this.name} answered ${response.status} to PUT`);
    await response.body?.cancel();
  }

  private async call(method: 'GET' | 'PUT', body?: string): Promise<Response> {
    try {
      return await fetch(this.url, {
        method,
        headers: { ...this.headers(), ...(body === undefined ? {} : { 'content-type': 'text/plain; charset=utf-8' }) },
        ...(body === undefined ? {} : { body }),
        redirect: 'error',
        signal: AbortSignal.timeout(URL_TIMEOUT_MS),
      });
    } catch (error) {
      throw new MirrorUnreachableError(`${this.name} could not be reached: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}
