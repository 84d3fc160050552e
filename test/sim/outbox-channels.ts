import { limits } from '../../shared/limits.ts';
import type { Channels, Delivery, DeliveryOutcome, NotificationsConfig } from '../../server/outbox/types.ts';
import type { Life } from './sim-journal.ts';
import type { World } from './world.ts';

// The people and agents the simulated outbox reaches, and the channels between: a delivery takes
// simulated time, may fail (retryably or not), may time out, and may reach its receiver while the
// answer is lost on the way back. Every delivery a receiver takes is kept, with what the journal
// held at that instant, for the invariants to judge at the end of the seed.

/**
 * The simulator's notifications: every member of the shipped groups is reached (cy two ways), three
 * groups have a team channel, and the agent has a callback. URLs are never dialled. Few channels
 * per escalation keep a thousand seeds quick.
 */
export function simNotifications(agent: string): NotificationsConfig {
  const email = (name: string) => ({ kind: 'email' as const, to: `${name}@sim.example` });
  const slack = (name: string) => ({ kind: 'slack' as const, url: `https://hooks.slack.sim.example/${name}` });
  const webhook = (name: string) => ({ kind: 'webhook' as const, url: `https://hooks.sim.example/${name}`, secret: `whsec_sim_${name}_0123456789` });
  return {
    publicUrl: 'https://interlock.sim.example',
    reminderAtShare: 0.5,
    smtp: { host: 'smtp.sim.example', port: 587, secure: false, user: null, password: null, from: 'Interlock <interlock@sim.example>' },
    people: { ana: [email('ana')], bea: [email('bea')], cy: [email('cy'), webhook('cy')], fm: [slack('fm')], ops: [email('ops')], rita: [email('rita')] },
    groups: { 'ap-leads': [slack('ap-leads')], 'finance-manager': [email('finance')], 'payments-ops': [webhook('payments-ops')] },
    agents: { [agent]: { url: `https://agent.sim.example/${agent}`, secret: `whsec_sim_${agent}_0123456789` } },
    callbackAllowPrivate: [],
  };
}

/** One delivery a receiver took, with how far the journal had come when it arrived. */
export interface Received {
  delivery: Delivery;
  step: number;
  atMs: number;
  /** How many entries the message's chain had when the delivery arrived: its MESSAGE must already be durable. */
  messageEntries: number;
  /** How many entries the chain of each item it tells of had when it arrived: the chain then is that prefix of the chain at the end. */
  itemEntries: ReadonlyMap<string, number>;
}

/** Everyone the outbox reaches. Receivers keep every delivery; they drop repeats by message id, as the contract asks. */
export class Receivers {
  readonly received: Received[] = [];
  /**
   * Per message id, how many of its sends reached the receiver and were never recorded by the
   * sender: the process died between the send and its record, or the answer was lost. Each one
   * allows one more delivery of the same message.
   */
  readonly unrecorded = new Map<string, number>();

  take(world: World, delivery: Delivery): void {
    const about = [delivery.content.effect_id, ...(delivery.content.items ?? []).map((item) => item.effect_id)].filter((id): id is string => id !== null);
    this.received.push({
      delivery,
      step: world.step,
      atMs: world.clock.wallMs,
      messageEntries: world.journal.chainLengthNow(delivery.id),
      itemEntries: new Map(about.map((id) => [id, world.journal.chainLengthNow(id)])),
    });
  }

  excuse(id: string): void {
    this.unrecorded.set(id, (this.unrecorded.get(id) ?? 0) + 1);
  }
}

/** What a send from a dead process comes to: nothing left it, and nobody hears the answer. */
const FROM_THE_DEAD: DeliveryOutcome = { ok: false, status: null, error: 'the process is dead', retryable: true };

/** Chance that a receiver answers 503, and that it refuses the message for good (a 4xx, a rejected mailbox). */
const UNAVAILABLE_CHANCE = 0.08;
const REFUSED_CHANCE = 0.02;
/** Chance that an answer is lost after the receiver took the message (a reset connection). */
const LOST_ANSWER_CHANCE = 0.04;

/**
 * One process's channels. A send takes time each way; one slower than the attempt timeout is a
 * timeout, which the receiver may or may not have taken. The process's death is watched: a send
 * that reached its receiver and was not recorded by then will be repeated by the next process.
 */
export class SimChannels implements Channels {
  /** Message ids whose send reached the receiver through this process, not known to be recorded. */
  readonly #reached = new Set<string>();

  constructor(
    private readonly world: World,
    private readonly life: Life & { onDeath(listener: () => void): void },
  ) {
    life.onDeath(() => this.#died());
  }

  async deliver(delivery: Delivery): Promise<DeliveryOutcome> {
    const { world } = this;
    const timeoutMs = limits.outboxAttemptTimeoutMs;
    if (this.life.dead) return FROM_THE_DEAD;
    const outMs = this.#latencyMs();
    const backMs = this.#latencyMs();
    await world.sleep(Math.min(outMs, timeoutMs));
    if (this.life.dead) return FROM_THE_DEAD;
    if (outMs >= timeoutMs) {
      world.hit('outbox.channel.timeout');
      return { ok: false, status: null, error: `no answer in ${timeoutMs} ms`, retryable: true };
    }
    const roll = world.rng.random();
    if (roll < UNAVAILABLE_CHANCE) {
      world.hit('outbox.channel.unavailable');
      await world.sleep(backMs);
      return { ok: false, status: 503, error: 'HTTP 503', retryable: true };
    }
    if (roll < UNAVAILABLE_CHANCE + REFUSED_CHANCE) {
      world.hit('outbox.channel.refused');
      await world.sleep(backMs);
      return { ok: false, status: 400, error: 'HTTP 400', retryable: false };
    }
    world.receivers.take(world, delivery);
    this.#reached.add(delivery.id);
    const lost = outMs + backMs >= timeoutMs || roll >= 1 - LOST_ANSWER_CHANCE;
    await world.sleep(lost ? timeoutMs - outMs : backMs);
    // A death meanwhile was noted by #died: the answer comes back to nobody.
    if (this.life.dead) return FROM_THE_DEAD;
    if (lost) {
      world.hit('outbox.channel.lost_answer');
      this.#reached.delete(delivery.id);
      world.receivers.excuse(delivery.id);
      return { ok: false, status: null, error: `no answer in ${timeoutMs} ms`, retryable: true };
    }
    return { ok: true, status: 200, detail: 'HTTP 200' };
  }

  /** Mostly a fraction of a second each way; sometimes seconds; rarely past the attempt timeout. */
  #latencyMs(): number {
    const { rng } = this.world;
    const roll = rng.random();
    if (roll < 0.85) return rng.randint(10, 300);
    if (roll < 0.98) return rng.randint(300, 4_000);
    return rng.randint(4_000, 14_000);
  }

  /** The process died: every send it made that reached a receiver and was not recorded will be sent again. */
  #died(): void {
    for (const id of this.#reached) {
      const recorded = this.world.journal.chainNow(id).some((entry) => entry.kind === 'ATTEMPT' && entry.outcome === 'delivered');
      if (!recorded) {
        this.world.hit('outbox.crash_between_send_and_record');
        this.world.receivers.excuse(id);
      }
    }
    this.#reached.clear();
  }
}
