import { runConformance, service } from '@engram/conformance';
import { conformanceRun } from './conformance-setup.ts';

// The whole suite again, every store and racing process connected through PgBouncer in
// transaction-pooling mode (scripts/pgbouncer.sh): consecutive transactions of one pool client
// may run on different server connections, so nothing may rely on session state.
const PGBOUNCER = service('pgbouncer', 'ENGRAM_PGBOUNCER_URL', 'start it with scripts/pgbouncer.sh');
runConformance(conformanceRun('pg through PgBouncer (transaction pooling)', { through: PGBOUNCER }).init);
