import net from 'node:net';

// A TCP proxy on 127.0.0.1 in front of a port, whose traffic can be made silent: nothing passes
// and nothing closes, as when a cable is pulled, a NAT table forgets, or a VM freezes. The peers
// see no reset and no FIN; bytes wait in the proxy. Restored, what waited passes on and the
// connections go on (or are found dead by whoever ended them meanwhile).

/** A silenceable proxy: `port` to connect to instead of the target's. */
export interface TcpProxy {
  port: number;
  /** Stop passing bytes both ways on every connection, and hold new ones unconnected, until `restore`. */
  silence(): void;
  /** Pass bytes again: the held connections reach the target now. */
  restore(): void;
  /** Close the proxy and every connection through it. */
  close(): void;
}

/** Open a proxy to `targetPort` on 127.0.0.1, on a free port of its own. */
export async function tcpProxy(targetPort: number): Promise<TcpProxy> {
  const pairs = new Set<[net.Socket, net.Socket]>();
  const held: net.Socket[] = [];
  const deferred = new Set<() => void>();
  let silent = false;
  const connect = (client: net.Socket) => {
    const upstream = net.connect(targetPort, '127.0.0.1');
    const pair: [net.Socket, net.Socket] = [client, upstream];
    pairs.add(pair);
    client.pipe(upstream);
    upstream.pipe(client);
    const drop = () => {
      // A close does not pass while silent either: the other side learns of it once restored.
      if (silent) return void deferred.add(drop);
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    for (const socket of pair) {
      socket.on('error', drop);
      socket.on('close', drop);
    }
  };
  const server = net.createServer((client) => {
    if (!silent) return connect(client);
    client.pause();
    client.on('error', () => client.destroy());
    held.push(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    silence() {
      silent = true;
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
    },
    restore() {
      silent = false;
      for (const [client, upstream] of pairs) {
        client.pipe(upstream);
        upstream.pipe(client);
      }
      for (const client of held.splice(0)) {
        if (client.destroyed) continue;
        connect(client);
        client.resume();
      }
      for (const drop of [...deferred]) drop();
      deferred.clear();
    },
    close() {
      server.close();
      for (const [client, upstream] of pairs) {
        client.destroy();
        upstream.destroy();
      }
      for (const client of held.splice(0)) client.destroy();
    },
  };
}
