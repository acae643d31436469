// One end of the port relays (port-relay.ts): `relay-entry.js LISTEN=CONNECT ...`, each side a
// TCP port on 127.0.0.1 of the namespace it runs in, or a Unix socket path. Prints "ready" once
// everything listens; exits when stdin closes, so it never outlives the harness that started it.
import { parseRelayEnd, startRelay } from './port-relay.js';

const pairs = process.argv.slice(2).map((arg) => {
  const [listen, connect, extra] = arg.split('=');
  if (!listen || !connect || extra !== undefined) throw new Error(`relay-entry: expected LISTEN=CONNECT, got "${arg}"`);
  return [parseRelayEnd(listen), parseRelayEnd(connect)] as const;
});
await Promise.all(pairs.map(([listen, connect]) => startRelay(listen, connect)));
process.stdout.write('ready\n');
process.stdin.on('end', () => process.exit(0)).resume();
