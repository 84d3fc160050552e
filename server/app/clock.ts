/**
 * The two clocks (spec README): `nowMs` is the application clock that SLAs, approval age,
 * decision times and the scoreboard run on; `wallMs` is the wall clock journal entries and
 * claims are stamped with. In test mode the application clock can be moved forward, so an SLA
 * can be crossed without waiting; the wall clock never moves by hand.
 */
export class AppClock {
  #offsetMs: number;

  /**
   * `store` keeps how far the clock was moved (test mode: clock-file.ts), so a restart goes on
   * from there instead of moving the application clock back behind what the journal recorded.
   */
  constructor(
    private readonly wall: () => number = Date.now,
    private readonly store: ClockOffsetStore | null = null,
  ) {
    this.#offsetMs = store?.read() ?? 0;
  }

  nowMs(): number {
    return this.wall() + this.#offsetMs;
  }

  wallMs(): number {
    return this.wall();
  }

  /** Move the application clock forward, kept by the store before it counts; returns the new time. */
  advance(ms: number): number {
    if (!Number.isSafeInteger(ms) || ms < 0) throw new RangeError('the clock only moves forward by a whole number of ms');
    const offsetMs = this.#offsetMs + ms;
    if (!Number.isSafeInteger(offsetMs)) throw new RangeError('the clock cannot move that far');
    this.store?.write(offsetMs);
    this.#offsetMs = offsetMs;
    return this.nowMs();
  }

  get offsetMs(): number {
    return this.#offsetMs;
  }
}

/** Where a moved application clock keeps its offset from the wall clock. */
export interface ClockOffsetStore {
  /** The offset kept, 0 when none was. */
  read(): number;
  /** Keep this offset; durable when it returns. */
  write(offsetMs: number): void;
}
