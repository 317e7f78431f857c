/**
 * What every pack's demo seed needs and no pack should write again: a seeded PRNG and its draws,
 * creation times that grow denser towards the end, COPY from a generator, and one transaction
 * through the admin connection followed by fresh statistics. Knows no table: the pack names them.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';

/** mulberry32: small, fast and good enough for demo data; the same seed gives the same sequence. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const pick = <T>(rand: () => number, items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;

/** The index of a weight, drawn in proportion to the weights (which add up to 1). */
export function weightedIndex(rand: () => number, weights: readonly number[]): number {
  let r = rand();
  for (let i = 0; i < weights.length; i++) {
    r -= weights[i]!;
    if (r < 0) return i;
  }
  return weights.length - 1;
}

/**
 * `count` instants in [start, end), whole seconds, sorted, so that ids given in order grow with time;
 * denser towards the end (a mix of uniform and square-root draws), as a growing business's rows are.
 */
export function demoInstants(rand: () => number, count: number, start: number, end: number): Float64Array {
  const times = new Float64Array(count);
  for (let i = 0; i < times.length; i++) {
    const u = rand();
    times[i] = start + Math.floor(((0.5 * u + 0.5 * Math.sqrt(u)) * (end - start - 1000)) / 1000) * 1000;
  }
  return times.sort();
}

/** Streams COPY text-format lines from a generator into a table. */
export async function copyInto(client: pg.Client, statement: string, lines: () => Generator<string>): Promise<void> {
  function* chunks(): Generator<string> {
    let buffer = '';
    for (const line of lines()) {
      buffer += line;
      if (buffer.length > 1 << 16) {
        yield buffer;
        buffer = '';
      }
    }
    if (buffer) yield buffer;
  }
  await pipeline(Readable.from(chunks()), client.query(copyFrom(statement)));
}

/**
 * Runs `load` in one transaction through the admin connection, sets the serial sequences of
 * `tables` ("schema.table", each with an `id`) past the ids loaded, and afterwards, outside the
 * transaction, vacuums and analyzes `tables`: fresh statistics, and a visibility map for index-only scans.
 */
export async function loadDemoData<T>(
  adminUrl: string,
  tables: { readonly serial: readonly string[]; readonly analyze: readonly string[] },
  load: (client: pg.Client) => Promise<T>,
): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl, application_name: 'querygate-seed' });
  await client.connect();
  let loaded: T;
  try {
    await client.query('begin');
    loaded = await load(client);
    for (const table of tables.serial) {
      await client.query(`select setval(pg_get_serial_sequence($1, 'id'), (select max(id) from ${table}))`, [table]);
    }
    await client.query('commit');
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    await client.end().catch(() => undefined);
  }
  const vacuum = new pg.Client({ connectionString: adminUrl, application_name: 'querygate-seed' });
  await vacuum.connect();
  try {
    await vacuum.query(`vacuum (analyze) ${tables.analyze.join(', ')}`);
  } finally {
    await vacuum.end();
  }
  return loaded;
}
