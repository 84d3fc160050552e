import { Reconciler } from '../../server/confirm/reconciler.ts';
import { confirmEvent } from '../../server/confirm/record.ts';
import { signWebhook, verifyWebhook } from '../../server/confirm/signature.ts';
import { limits } from '../../shared/limits.ts';
import { agentConcurrent, agentNew, approverDecide } from './actors.ts';
import { refundLister } from './process-target.ts';
import { startSpell } from './rate-limits.ts';
import { allEntries } from './sim-journal.ts';
import { createProcess, startUp, tickerPass } from './process.ts';
import { CONFIG, type World } from './world.ts';

/** Stripe's side and time: webhooks (duplicated, reordered, late), lookups, SLA ticks and the ticker. */

const WEBHOOK_SECRET = 'whsec_simulator';

/**
 * Deliver one queued event through the real signature check and recording: mostly the oldest,
 * sometimes another (reordered); an event whose delivery crashed stays queued, and a delivered
 * one is sometimes delivered again (Stripe does not promise once).
 */
export async function deliverWebhook(world: World, keepChance = 0.25): Promise<void> {
  if (world.webhooks.length === 0) return;
  const index = world.chance(0.3) ? world.rng.randbelow(world.webhooks.length) : 0;
  const queued = world.webhooks[index]!;
  if (index > 0) world.hit('webhook.reordered');
  if (queued.deliveries > 0) world.hit('webhook.duplicated');
  if (world.step - queued.queuedAtStep >= 5) world.hit('webhook.late');
  const refund = (queued.body.data as { object: { metadata: { interlock_effect_id?: string } } }).object;
  const effectId = refund.metadata.interlock_effect_id;
  if (effectId !== undefined && !world.journal.chainNow(effectId).some((e) => e.kind === 'COMMITTED')) world.hit('webhook.before_commit');
  const payload = Buffer.from(JSON.stringify(queued.body), 'utf8');
  const event = verifyWebhook(payload, signWebhook(payload, WEBHOOK_SECRET, Math.floor(world.clock.wallMs / 1000)), [WEBHOOK_SECRET], world.clock.wallMs);
  const p = world.process;
  const result = await world.guarded('a webhook', () => confirmEvent(p.journal, event));
  // A delivery that crashed is answered with no 200: Stripe delivers it again.
  if (result === undefined) return;
  queued.deliveries += 1;
  world.hit(`webhook.result.${result}`);
  if (result === 'REFUSED:mismatch') world.violation(`a webhook for refund ${JSON.stringify(queued.body.data)} was refused as a mismatch`);
  if (!world.chance(keepChance)) world.webhooks.splice(world.webhooks.indexOf(queued), 1);
}

/** One pass of the lookup reconciler, for refunds whose webhook never came. */
export async function reconcileLookups(world: World): Promise<void> {
  const p = world.process;
  const reconciler = new Reconciler({
    journal: p.journal,
    target: refundLister(world, p.life),
    candidates: async () => (await p.views.current()).inbox.unconfirmedSent(),
    nowMs: () => world.clock.wallMs,
    onError: (effectId, error) => world.expected(`a lookup of ${effectId}`, error),
  });
  const pass = await world.guarded('a reconciler pass', () => reconciler.runPass());
  for (const { result, effectId } of pass?.looked ?? []) {
    world.hit(`lookup.result.${result}`);
    if (result === 'REFUSED:mismatch') world.violation(`a lookup of ${effectId} was refused as a mismatch`);
  }
}

/** Time passes (minutes to half a day) and the SLA tick runs. */
export async function slaTick(world: World): Promise<void> {
  const roll = world.rng.random();
  const minutes = roll < 0.6 ? world.rng.randint(1, 60) : roll < 0.9 ? world.rng.randint(60, 300) : world.rng.randint(300, 720);
  world.clock.wallMs += minutes * 60_000;
  const moved = await world.guarded('tick', () => world.process.inbox.tick());
  world.hit('sla.moved', moved?.size ?? 0);
}

/** A day passes: Stripe forgets idempotency keys and approvals expire. */
export async function keyWindow(world: World): Promise<void> {
  world.clock.wallMs += 25 * 3_600_000;
}

/**
 * Stripe rate-limits refund creates for a spell longer than the gate's minute of tries while
 * refunds are sent: a new request, a burst on one payment, an approval, or the ticker's pass. A
 * send the gate let go of is sent by a later pass of recovery (shorter spells come from the
 * `send_rate_limit` fault).
 */
export async function rateLimitSpell(world: World): Promise<void> {
  startSpell(world, true);
  const send = world.pick<(w: World) => Promise<void>>([agentNew, (w) => agentConcurrent(w), approverDecide, ticker]);
  await send(world);
}

export async function ticker(world: World): Promise<void> {
  world.clock.wallMs += world.rng.randint(1, 30) * 1_000;
  await tickerPass(world);
}

/**
 * Two servers on one journal at once: this one's ticker pass and the other's pass, or the other's
 * whole start-up (a rolling restart). Claims and guarded appends keep them apart.
 */
export async function tickerTwoServers(world: World): Promise<void> {
  world.clock.wallMs += world.rng.randint(1, 30) * 1_000;
  const peer = createProcess(world);
  const starting = world.chance(0.5);
  if (starting) world.hit('ticker.two_servers.start_up');
  const other = starting ? world.guarded('start-up of a second server', () => startUp(world, peer)) : tickerPass(world, peer);
  await Promise.all([tickerPass(world), other]);
  if (peer.life.dead) world.hit('restart.second_server_died');
}

/**
 * Jump to just before a deadline the journal holds (an approval's expiry, an SLA, a dispatch's
 * claim or key window), so that the calls that follow, which take time, cross it mid-flight.
 */
export async function toDeadline(world: World): Promise<void> {
  const deadlines: Array<{ name: string; atMs: number }> = [];
  for (const entry of await allEntries(world.journal)) {
    if (entry.kind === 'DECIDED' && entry.decision === 'approve' && CONFIG.approvalMaxAgeMs !== null) {
      deadlines.push({ name: 'approval_expiry', atMs: entry.at_ms + CONFIG.approvalMaxAgeMs });
    } else if (entry.kind === 'ESCALATED' && entry.due_ms !== null) {
      deadlines.push({ name: 'sla_due', atMs: entry.due_ms });
    } else if (entry.kind === 'DISPATCHED') {
      deadlines.push({ name: 'claim_expiry', atMs: entry.ts_ms + limits.claimTtlMs });
      deadlines.push({ name: 'key_window', atMs: entry.ts_ms + limits.stripeKeyWindowMs - limits.dedupMarginMs });
    }
  }
  const ahead = deadlines.filter((d) => d.atMs > world.clock.wallMs);
  if (ahead.length === 0) return;
  const deadline = world.pick(ahead);
  world.hit(`clock.to_deadline.${deadline.name}`);
  world.clock.wallMs = Math.max(world.clock.wallMs, deadline.atMs - world.rng.randint(0, 3_000));
}
