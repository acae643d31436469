// One lab target per test file: started before the file's tests, closed after them; and what the
// lab's DNS server saw.
import { Resolver } from 'node:dns/promises';
import { after, before } from 'node:test';
import { createLogger } from '../../common/log.js';
import { startLab, type Lab } from '../../lab/index.js';

/** The file's lab. Its members are there once the file's `before` hooks have run. */
export function labForThisFile(): Lab {
  const lab = {} as Lab;
  before(async () => {
    Object.assign(lab, await startLab({ log: createLogger('test', 'silent') }));
  });
  after(async () => {
    await lab.close();
  });
  return lab;
}

/** How many A and AAAA queries the lab's DNS server had for `name` (its TXT record `_queries.NAME`). */
export async function labDnsQueries(lab: Lab, name: string): Promise<number> {
  const resolver = new Resolver({ timeout: 2_000, tries: 2 });
  resolver.setServers([`127.0.0.1:${lab.servers.dns.port}`]);
  const [[count]] = await resolver.resolveTxt(`_queries.${name}`);
  return Number(count);
}
