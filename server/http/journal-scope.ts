import type { FastifyInstance } from 'fastify';

/**
 * Every route of `scope` shows or changes what the journal holds: before any of its handlers runs,
 * the views catch up with everything durable, so a row anywhere in the journal that fails its
 * check is found first and the request is answered 503 journal_unavailable, with nothing read,
 * shown, written or sent. A route added to such a scope cannot forget it. Routes that show nothing
 * of the journal (health, the keys, the document, logging in, the directory) live outside one.
 */
export function requireJournal(scope: FastifyInstance, views: { current(): Promise<unknown> }): void {
  scope.addHook('preHandler', async () => {
    await views.current();
  });
}
