/**
 * Which running servers have demo traffic asking through them, keyed by their services, so the
 * session can say so without the app being built around a demo. A server whose demo traffic
 * stopped, or reached its limit, is no longer in it.
 */
const asking = new WeakSet<object>();

/** Demo traffic started (true) or stopped (false) over these services. */
export function markDemoTraffic(services: object, running: boolean): void {
  if (running) asking.add(services);
  else asking.delete(services);
}

/** True while demo traffic asks for refunds through these services. */
export function demoTrafficRuns(services: object): boolean {
  return asking.has(services);
}
