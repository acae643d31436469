// The NFQUEUE helper's seeded draws (regions/delay/nfq-delay.c), again in TypeScript: what a
// region's link does to its connection-opening packets under a seed, so a test can say in advance
// which connects lose their SYN and how long each SYN and SYN-ACK is held. Must follow the C code
// step for step: splitmix64 streams, one per direction and kind, two draws per packet.
const MASK = (1n << 64n) - 1n;

function splitmix64(state: { value: bigint }): bigint {
  state.value = (state.value + 0x9e3779b97f4a7c15n) & MASK;
  let z = state.value;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK;
  return z ^ (z >> 31n);
}

const DIRECTIONS = { up: 0, down: 1 } as const;
/** The stream of connection-opening packets (TCP SYN, SYN-ACK); the others draw from kind 1. */
const OPENING = 0;
const KINDS = 2;

/** The draws (uniform in [0, 1)) of one direction's connection-opening packets, in order. */
export function openingDraws(seed: number, direction: keyof typeof DIRECTIONS): () => { loss: number; jitter: number } {
  const streamNumber = BigInt(1 + DIRECTIONS[direction] * KINDS + OPENING);
  const mix = { value: (BigInt(seed) ^ ((0xd1b54a32d192ed03n * streamNumber) & MASK)) & MASK };
  const state = { value: splitmix64(mix) };
  const uniform = () => Number(splitmix64(state) >> 11n) / 2 ** 53;
  return () => ({ loss: uniform(), jitter: uniform() });
}

/** For `connects` connects in a row on a link that loses `upPercent` of packets towards the
 * target (and none back): how many SYNs each connect loses before one gets through. */
export function synLosses(seed: number, upPercent: number, connects: number): number[] {
  const next = openingDraws(seed, 'up');
  return Array.from({ length: connects }, () => {
    let lost = 0;
    while (next().loss * 1e6 < Math.round(upPercent * 1e4)) lost++;
    return lost;
  });
}

/** For connects in a row on a link that loses nothing: each connect's handshake round trip
 * (SYN held up, SYN-ACK held down), ms, for the link's RTT and jitter. */
export function synRoundTrips(seed: number, rttMs: number, jitterMs: number, connects: number): number[] {
  const [up, down] = [openingDraws(seed, 'up'), openingDraws(seed, 'down')];
  // The helper holds each packet for RTT/2 + (draw - 0.5) x jitter, in whole microseconds.
  const held = (draw: number) =>
    Math.max(0, Math.round(rttMs * 500) + Math.trunc((draw - 0.5) * Math.round(jitterMs * 1000))) / 1000;
  return Array.from({ length: connects }, () => held(up().jitter) + held(down().jitter));
}
