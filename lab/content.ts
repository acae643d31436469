// Bodies the lab serves, generated in code from a fixed seed so every run and every machine
// serves the same bytes: the 179,500-byte products.json of the HTTP performance lecture
// (docs/probes.md#sources), its 19-byte tiny JSON, 100,000 random bytes standing in for a JPEG,
// and large bodies of any size.
import { prng } from '../common/stats.js';

/** The size of the lecture's products.json. */
export const PRODUCTS_JSON_BYTES = 179_500;
export const RANDOM_BYTES = 100_000;
/** The lecture's tiny JSON, byte for byte. */
export const TINY_JSON = Buffer.from('{"ok":true,"id":42}');

const ADJECTIVES = [
  'compact',
  'wireless',
  'ergonomic',
  'durable',
  'portable',
  'classic',
  'premium',
  'recycled',
  'smart',
  'foldable',
  'quiet',
  'waterproof',
];
const NOUNS = [
  'desk lamp',
  'backpack',
  'keyboard',
  'water bottle',
  'headphones',
  'notebook',
  'chair',
  'kettle',
  'umbrella',
  'monitor stand',
  'charger',
  'mug',
];
const CATEGORIES = ['office', 'outdoor', 'kitchen', 'audio', 'stationery', 'furniture', 'travel', 'electronics'];
const COLOURS = ['black', 'white', 'graphite', 'navy', 'sand', 'forest green', 'red', 'silver'];
const WORDS = [
  'made',
  'for',
  'everyday',
  'use',
  'with',
  'a',
  'two',
  'year',
  'warranty',
  'and',
  'free',
  'returns',
  'ships',
  'in',
  'plastic-free',
  'packaging',
  'from',
  'our',
  'warehouse',
  'light',
  'strong',
  'easy',
  'to',
  'clean',
];

function pick<T>(random: () => number, list: readonly T[]): T {
  return list[Math.floor(random() * list.length)];
}

function sentence(random: () => number, words: number): string {
  return Array.from({ length: words }, () => pick(random, WORDS)).join(' ');
}

function product(random: () => number, id: number) {
  const name = `${pick(random, ADJECTIVES)} ${pick(random, NOUNS)}`;
  return {
    id,
    sku: `PF-${String(100_000 + id * 7)}`,
    name,
    category: pick(random, CATEGORIES),
    price: { amount: Math.round(500 + random() * 20_000) / 100, currency: 'EUR' },
    stock: Math.floor(random() * 500),
    rating: Math.round(10 + random() * 40) / 10,
    colours: COLOURS.filter(() => random() < 0.3),
    description: `${name[0].toUpperCase()}${name.slice(1)}, ${sentence(random, 8 + Math.floor(random() * 10))}.`,
    dimensions: {
      widthMm: 50 + Math.floor(random() * 400),
      heightMm: 50 + Math.floor(random() * 400),
      weightG: 100 + Math.floor(random() * 3000),
    },
    available: random() < 0.85,
  };
}

/** Pretty-printed JSON of exactly `size` bytes: as many products as fit, then a note that fills the rest. */
export function productsJson(size = PRODUCTS_JSON_BYTES): Buffer {
  const random = prng(7);
  // Products average well over 300 bytes rendered; generate enough, then find how many fit.
  const all = Array.from({ length: Math.ceil(size / 300) + 1 }, (_, i) => product(random, i + 1));
  const render = (count: number, note: string) =>
    JSON.stringify({ catalogue: 'probefleet lab', note, products: all.slice(0, count) }, null, 2);
  let lo = 0;
  let hi = all.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (render(mid, '').length <= size) lo = mid;
    else hi = mid - 1;
  }
  const fill = size - render(lo, '').length;
  let note = '';
  while (note.length < fill) note += `${pick(random, WORDS)} `;
  const text = render(lo, note.slice(0, fill));
  if (Buffer.byteLength(text) !== size)
    throw new Error(`products JSON is ${Buffer.byteLength(text)} bytes, wanted ${size}`);
  return Buffer.from(text);
}

/** Bytes from the seeded PRNG: as incompressible as a JPEG, PNG, MP4 or ZIP. */
export function randomBytes(size = RANDOM_BYTES, seed = 7): Buffer {
  const random = prng(seed);
  const out = Buffer.allocUnsafe(size);
  for (let i = 0; i < size; i++) out[i] = Math.floor(random() * 256);
  return out;
}

const LARGE_PATTERN = Buffer.from('probefleet lab large body 0123456789abcdefghijklmnopqrstuvwxyz\n');

/** A body of `size` bytes made of a repeated line (its content does not matter, its size does). */
export function largeBody(size: number): Buffer {
  return Buffer.alloc(size, LARGE_PATTERN);
}
