import type { FastifyServerOptions } from 'fastify';
import type { LogLevel } from '../config/env.ts';

/**
 * How the server logs: pino's JSON lines, one per event, for whatever collects them; on a
 * terminal (a person running `npm start`), the same lines made readable by pino-pretty, in a
 * worker thread of pino's so the server never waits on the formatting.
 */
export function loggerOptions(level: LogLevel, terminal: boolean): FastifyServerOptions['logger'] {
  if (level === 'silent') return false;
  if (!terminal) return { level };
  return { level, transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } } };
}
