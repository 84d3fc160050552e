// A test process that starts its throwaway PostgreSQL cluster, says where it is, and waits to be
// killed (test/support-tests/postgres-cluster.test.ts). Usage: node --import tsx pg-cluster-child.ts
import { postgresCluster } from '../../support/postgres.ts';

const cluster = await postgresCluster();
process.stdout.write(`${JSON.stringify({ port: cluster.port, dir: cluster.socketDir })}\n`);
setInterval(() => {}, 60_000);
