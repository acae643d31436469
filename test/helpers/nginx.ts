// Debian's nginx (installed by test/services/ensure.sh) for tests whose subject is a real server's
// behaviour: its gzip levels, its Alt-Svc header, the connections it sees. Each test starts its
// own (common/nginx-server.ts) and stops it. Outside CI a missing nginx skips the test with what
// to run; under CI=true the test fails.
import { nginxMissing } from '../../common/nginx-server.js';

export { startNginx, type Nginx, type NginxServerConfig } from '../../common/nginx-server.js';

/** Test options: skip outside CI when nginx is missing (under CI the test runs and fails). */
export const needsNginx = { skip: process.env.CI === 'true' ? false : nginxMissing() };
