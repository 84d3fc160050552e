import { ERROR_CODES, type ErrorBody, type ErrorCode } from '../../shared/api.ts';
import { isJsonObject } from '../../shared/json.ts';

/** Failures the browser meets before any answer from the server: these have no server code. */
export const CLIENT_ERROR_CODES = ['network_error', 'bad_answer'] as const;
/** One client-side failure. */
export type ClientErrorCode = (typeof CLIENT_ERROR_CODES)[number];

/** A failed call, with the server's stable code (or a client code) and a sentence for a person. */
export class ApiError extends Error {
  constructor(
    readonly code: ErrorCode | ClientErrorCode,
    message: string,
    readonly httpStatus: number,
    /** From `Retry-After` (on `429 rate_limited`): how long to wait before sending the same call again. */
    readonly retryAfterS: number | null = null,
  ) {
    super(message);
  }
}

/** The session codes that send a person back to the log-in page. */
export type SessionLoss = Extract<ErrorCode, 'unauthorized' | 'session_expired'>;

let csrfToken = '';
/** Told when a call finds the session gone; `unsent` names the decision that call carried, which was not recorded. */
export type SessionLostHandler = (code: SessionLoss, unsent?: string) => void;

let onSessionLost: SessionLostHandler | null = null;

/** The CSRF token of the current session; every non-GET call carries it. */
export function setCsrfToken(token: string): void {
  csrfToken = token;
}

/** Who to tell when a call finds the session gone (expired, or logged out elsewhere). */
export function setSessionLostHandler(handler: SessionLostHandler | null): void {
  onSessionLost = handler;
}

function isErrorBody(value: unknown): value is ErrorBody {
  return isJsonObject(value) && isJsonObject(value.error) && typeof value.error.code === 'string' && Object.hasOwn(ERROR_CODES, value.error.code);
}

/** The header of a read the page makes on its own (the live feed said something moved): it does not keep the session alive. */
export const BACKGROUND_HEADER = 'x-interlock-background';

export interface CallOptions {
  /** A read the page makes by itself, not the person: the session's idle time runs on. */
  background?: boolean;
  /** What this call carries, in words, for the notice when the session turns out to have ended: it was not recorded. */
  unsent?: string;
}

/** Call the approvers' API: JSON in and out, the CSRF header on writes, `{error}` answers thrown as ApiError. */
export async function callApi<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown, options: CallOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET') headers['x-csrf-token'] = csrfToken;
  if (options.background) headers[BACKGROUND_HEADER] = '1';
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers,
      credentials: 'same-origin',
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch {
    throw new ApiError('network_error', 'The server could not be reached. Check your connection and try again.', 0);
  }
  let data: unknown = null;
  const text = await response.text();
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    throw new ApiError('bad_answer', `The server answered something unreadable (HTTP ${response.status}).`, response.status);
  }
  if (response.ok) return data as T;
  if (!isErrorBody(data)) throw new ApiError('bad_answer', `The server answered HTTP ${response.status} without an explanation.`, response.status);
  const { code, message } = data.error;
  if ((code === 'session_expired' || code === 'unauthorized') && path !== '/api/session') onSessionLost?.(code, options.unsent);
  const retryAfter = response.headers.get('retry-after');
  throw new ApiError(code, message, response.status, retryAfter !== null && /^\d{1,6}$/.test(retryAfter) ? Number(retryAfter) : null);
}

/** A sentence for any thrown value. */
export function messageOf(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  return error instanceof Error ? error.message : String(error);
}
