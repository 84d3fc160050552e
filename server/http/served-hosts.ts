// Which Host names the server answers (a pure decision; app.ts installs it). A page on another
// name that resolves to this server (DNS rebinding) must not be served, nor be able to log in.

/** Names of this machine itself: a browser elsewhere never sends them for another site. */
export const LOOPBACK_HOSTS = ['localhost', '127.0.0.1', '::1'] as const;

/** The listening addresses that are no name anyone reaches the server by. */
const WILDCARD_HOSTS = new Set(['0.0.0.0', '::']);

/**
 * The host names the server answers: the loopback names, the address it listens on, the host of
 * `public_url`, and `allowed_hosts`.
 */
export function servedHosts(input: { allowedHosts: readonly string[]; publicUrl: string | null; listenHost: string | null }): ReadonlySet<string> {
  const served = new Set<string>(LOOPBACK_HOSTS);
  if (input.listenHost !== null && !WILDCARD_HOSTS.has(input.listenHost)) served.add(hostNameOf(input.listenHost));
  if (input.publicUrl !== null) served.add(hostNameOf(new URL(input.publicUrl).hostname));
  for (const host of input.allowedHosts) served.add(hostNameOf(host));
  return served;
}

/** A host name as compared: lowercase, an IPv6 address without its brackets, no final dot. */
export function hostNameOf(hostname: string): string {
  const lower = hostname.toLowerCase();
  const bare = lower.startsWith('[') && lower.endsWith(']') ? lower.slice(1, -1) : lower;
  return bare.endsWith('.') ? bare.slice(0, -1) : bare;
}

/** Whether a request for `hostname` (a Host header's name, without its port) is answered. */
export function isServedHost(hostname: string, served: ReadonlySet<string>): boolean {
  return hostname !== '' && served.has(hostNameOf(hostname));
}
