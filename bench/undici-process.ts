// A benchmark child process: the floor under probefleet's sequential numbers. N sequential
// requests over one bare undici Client (dispatch, body discarded, nothing else), RUNS times in
// one process like the probefleet child; prints each run's median per-request time (ms) as JSON.
// probefleet / this = what probefleet adds to its HTTP library; this / curl = Node and undici.
import { performance } from 'node:perf_hooks';
import { Client } from 'undici';
import { median } from '../common/stats.js';

const [url, requests, runs] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])];
const { origin, pathname, search } = new URL(url);

function once(client: Client): Promise<void> {
  return new Promise((resolve, reject) => {
    client.dispatch(
      { path: pathname + search, method: 'GET' },
      { onConnect() {}, onHeaders: () => true, onData: () => true, onComplete: () => resolve(), onError: reject },
    );
  });
}

const medians: number[] = [];
for (let run = 0; run < runs; run++) {
  const client = new Client(origin);
  const times: number[] = [];
  for (let i = 0; i < requests; i++) {
    const start = performance.now();
    await once(client);
    times.push(performance.now() - start);
  }
  await client.close();
  medians.push(median(times));
}
process.stdout.write(JSON.stringify(medians));
