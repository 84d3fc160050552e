/**
 * A map that never holds more than `entriesMax` entries: reading or writing an entry makes it the
 * most recently used, and a write beyond the bound forgets the least recently used one. A
 * throttle that forgets an entry is more lenient to that key, never stricter to another, so the
 * bound costs at most a fresh start to a key nobody has used for longest.
 */
export class BoundedStore<V> {
  readonly #entries = new Map<string, V>();

  constructor(readonly entriesMax: number) {
    if (!(Number.isSafeInteger(entriesMax) && entriesMax > 0)) throw new RangeError('a store holds at least one entry');
  }

  get(key: string): V | undefined {
    const value = this.#entries.get(key);
    if (value === undefined) return undefined;
    // A Map keeps insertion order: moving the key to the end keeps the least recently used first.
    this.#entries.delete(key);
    this.#entries.set(key, value);
    return value;
  }

  set(key: string, value: V): void {
    this.#entries.delete(key);
    this.#entries.set(key, value);
    if (this.#entries.size > this.entriesMax) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
  }

  delete(key: string): void {
    this.#entries.delete(key);
  }

  get size(): number {
    return this.#entries.size;
  }
}
