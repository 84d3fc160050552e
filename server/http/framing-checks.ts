import type { FastifyInstance } from 'fastify';
import { AppError } from './errors.ts';

// Two refusals Node's HTTP server makes by itself, before any hook, with neither the contract's
// error shape nor an X-Request-Id: an HTTP/1.1 request with no Host (an empty 400) and an Expect
// other than 100-continue (an empty 417). Node is told to let both through (`requireHostHeader`
// off, a `checkExpectation` listener), and they are refused here like every other bad request.

/** Refuse, in the contract's shape, the requests Node would have refused with bare answers. */
export function installFramingChecks(app: FastifyInstance): void {
  // With a listener, Node hands an unknown expectation here instead of answering 417 itself.
  app.server.on('checkExpectation', (request, response) => app.server.emit('request', request, response));
  app.addHook('onRequest', async (request) => {
    const raw = request.raw;
    if (raw.httpVersionMajor === 1 && raw.httpVersionMinor >= 1 && raw.headers.host === undefined) {
      throw new AppError('validation_failed', 'an HTTP/1.1 request names its Host');
    }
    const expect = raw.headers.expect;
    if (expect !== undefined && expect.trim().toLowerCase() !== '100-continue') {
      throw new AppError('validation_failed', 'Expect may only be 100-continue; send the request without it');
    }
  });
}
