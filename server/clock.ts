/**
 * The two clocks (spec README): `nowMs` is the application clock that SLAs, approval age,
 * decision times and the scoreboard run on; `wallMs` is the wall clock journal entries and
 * claims are stamped with. In test mode the application clock can be moved forward, so an SLA
 * can be crossed without waiting; the wall clock never moves by hand.
 */
export class AppClock {
  #offsetMs = 0;

  constructor(private readonly wall: () => number = Date.now) {}

  nowMs(): number {
    return this.wall() + this.#offsetMs;
  }

  wallMs(): number {
    return this.wall();
  }

  /** Move the application clock forward; returns the new time. */
  advance(ms: number): number {
    if (!Number.isSafeInteger(ms) || ms < 0) throw new RangeError('the clock only moves forward by a whole number of ms');
    this.#offsetMs += ms;
    return this.nowMs();
  }

  get offsetMs(): number {
    return this.#offsetMs;
  }
}
