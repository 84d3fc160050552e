import { type AppWorld, buildAppWorld } from '../support/app-world.ts';

/** An app world that also listens on a loopback port, so a client talks to it over real HTTP. */
export interface ListeningWorld {
  world: AppWorld;
  url: string;
  /** Approve the open escalation of an effect as `ana` (ap-leads), through the approvers' API. */
  approve(effectId: string): Promise<string>;
  close(): Promise<void>;
}

/** The whole server built as `npm start` builds it, listening on a free loopback port. */
export async function startListeningWorld(): Promise<ListeningWorld> {
  const world = await buildAppWorld();
  const url = await world.app.listen({ port: 0, host: '127.0.0.1' });
  return {
    world,
    url,
    async approve(effectId) {
      const ana = await world.login('ana');
      const item = (await world.as(ana, 'GET', `/api/items/${effectId}`)).json();
      const decided = await world.as(ana, 'POST', `/api/items/${effectId}/decisions`, { action: 'approve', escalation: item.item.escalation });
      return decided.json().status;
    },
    close: () => world.close(),
  };
}
