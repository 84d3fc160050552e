import { plain, jsonEqual } from '../../shared/json.ts';
import { isRefundRequest } from '../../shared/api.ts';
import type { Status } from '../../shared/statuses.ts';
import { currentStatus } from '../../server/refunds/answers.ts';
import type { InboxRequest } from '../../server/inbox/inbox.ts';
import { boundRequest, waitsItsTurn } from '../../server/inbox/state.ts';
import { READ_PAYMENT } from '../../server/stripe/paced-client.ts';
import type { Process } from './process.ts';
import type { World } from './world.ts';
import { nextHttpRequestId } from './request-id-invariants.ts';

// Stripe's answers when it has no room (server/stripe/): a send answered 429 `rate_limit` or
// `lock_timeout` did nothing and kept nothing under its key, and the gate tries it again on the
// simulated clock; a read answered 429 is waited out and made again by the paced transport, so it
// is slower and never fails; and a process's Stripe budget with no room for a new request's read
// and create sends the request, as the agents' API takes it in, to wait its turn
// (server/stripe/turn-queue.ts).

/** How often a send that arrives beside another send on its payment meets a lock_timeout. */
const LOCK_TIMEOUT_CONTENDED_CHANCE = 0.3;
/** How often a 429 rate_limit opens a spell in which Stripe answers every refund create 429. */
const SPELL_CHANCE = 0.2;
/** A spell's length: from a few seconds to past the gate's retry window, so some sends let go and recovery sends them. */
const SPELL_MS_MIN = 3_000;
const SPELL_MS_MAX = 100_000;
/** How long the other calls that fill a budget hold their places, before the second each is held after its answer. */
const FILL_HELD_MS_MIN = 100;
const FILL_HELD_MS_MAX = 1_500;

/**
 * Stripe rate-limits refund creates from now for a while (the endpoint's own limit, which other
 * integrations on the account share), with `pastRetryWindow` longer than the gate's minute of
 * tries; reads, counted apart, are not held up by it.
 */
export function startSpell(world: World, pastRetryWindow = false): void {
  const retryMs = world.process.gate.busyRetryMs;
  const ms = world.rng.randint(pastRetryWindow ? retryMs + SPELL_MS_MIN : SPELL_MS_MIN, SPELL_MS_MAX);
  world.hit('stripe.spell');
  if (ms > retryMs) world.hit('stripe.spell.past_retry_window');
  world.busyUntilMs = Math.max(world.busyUntilMs, world.clock.wallMs + ms);
}

/**
 * What Stripe answers a send to this payment arriving now when it answers 429, or null when it
 * takes the send. `sendsOut` counts the sends on the payment out at Stripe, this one included.
 */
export function busyAnswer(world: World, paymentIntent: string): string | null {
  if (!world.faultsOn) return null;
  if (world.clock.wallMs < world.busyUntilMs) {
    world.hit('fault.send_rate_limit.in_spell');
    return '429 rate_limit: too many requests hit the API too quickly';
  }
  const contended = (world.sendsOut.get(paymentIntent) ?? 0) > 1;
  if (world.fault('send_lock_timeout', contended ? LOCK_TIMEOUT_CONTENDED_CHANCE : undefined)) {
    if (contended) world.hit('fault.send_lock_timeout.contended');
    return '429 lock_timeout: another request on this payment holds its lock';
  }
  if (world.fault('send_rate_limit')) {
    if (world.chance(SPELL_CHANCE)) startSpell(world);
    return '429 rate_limit: too many requests hit the API too quickly';
  }
  return null;
}

/**
 * The extra time a read takes when Stripe answers it 429: the paced transport's tries with backoff
 * until one is answered. A read is never failed by a 429 (the transport gives up only after a
 * minute, which these never reach).
 */
export function readWaitMs(world: World): number {
  if (!world.fault('read_rate_limit')) return 0;
  let waitMs = 0;
  for (let attempt = 0, tries = world.rng.randint(1, 4); attempt < tries; attempt++) waitMs += world.rng.randint(250, 500) * 2 ** attempt;
  return waitMs;
}

/**
 * Other calls of the process (background reads, other requests) take every place of its Stripe
 * budget's window for a while: a request arriving now finds no room for its read and create.
 */
export function fillBudget(world: World, p: Process): void {
  const calls: Array<{ finished(): void }> = [];
  for (let grant = p.budget.tryTake('background', [READ_PAYMENT]); grant !== null; grant = p.budget.tryTake('background', [READ_PAYMENT])) {
    const call = grant.use(READ_PAYMENT);
    if (call) calls.push(call);
  }
  // Answered together: one wake-up of the simulated clock rather than one a call.
  void world.sleep(world.rng.randint(FILL_HELD_MS_MIN, FILL_HELD_MS_MAX)).then(() => {
    for (const call of calls) call.finished();
  });
}

/**
 * The agents' API's way in (server/http/agent-routes.ts): a new request takes its read and create
 * from the process's Stripe budget together; with no room it is journaled bound to its payload
 * with no facts (a lease-null, premises-null PROPOSED), queued, and answered QUEUED. The same
 * payload again while it waits waits on; anything else goes to the inbox (which refuses another
 * payload, as the API does before it, with nothing written).
 */
export async function askAsAgent(world: World, p: Process, request: InboxRequest): Promise<Status> {
  const effectId = p.inbox.effectIdOf(request);
  // Each call comes with an x-request-id of its own, as agents' calls over HTTP do.
  const httpRequestId = nextHttpRequestId(world, effectId);
  const before = await p.journal.entries(effectId);
  const bound = boundRequest(before);
  const waiting = waitsItsTurn(before);
  if (bound !== null && !(waiting && jsonEqual(plain(bound), plain(request)))) return p.inbox.submit(request, undefined, undefined, httpRequestId);
  if (!waiting && world.fault('budget_full')) fillBudget(world, p);
  const grant = waiting ? null : await p.turns.admit();
  if (grant !== null) {
    // The simulated target is not paced, so the grant only holds its places while the inbox decides.
    try {
      return await p.inbox.submit(request, undefined, undefined, httpRequestId);
    } finally {
      grant.release();
    }
  }
  if (!waiting) {
    if (!isRefundRequest(request)) throw new Error(`${request.id} is not a request as the agents' API binds one`);
    const accepted = await p.turns.accept(effectId, request, httpRequestId);
    // Another request under this id bound it first: another payload is a conflict, nothing written.
    const winner = accepted ? null : boundRequest(await p.journal.entries(effectId));
    if (winner !== null && !jsonEqual(plain(winner), plain(request))) return 'REFUSED:conflicting_payload';
    if (accepted) world.hit('turn.waiting');
  }
  p.turns.enqueue(effectId);
  return currentStatus(await p.journal.entries(effectId));
}
