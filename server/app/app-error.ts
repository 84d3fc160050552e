import { ERROR_CODES, type ErrorCode } from '../../shared/api.ts';

/**
 * The world's mistake, answered with a stable code; our own bugs are plain Errors and become
 * internal_error. `retryAfterS`, when given, is sent as Retry-After: when the same call may come again.
 */
export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly retryAfterS: number | null = null,
  ) {
    super(message);
  }

  get statusCode(): number {
    return ERROR_CODES[this.code];
  }
}
