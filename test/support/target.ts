/**
 * The packs and database the contract suite and the scaffolded end-to-end tests run against: the
 * shipped packs and those QUERYGATE_PACKS or the configuration file names, on the shared test database,
 * each seeded with its own test data (`npm test`); or, with QUERYGATE_PACKS and DATABASE_URL both set,
 * those packs (loaded as `serve` loads them) on your own database, read as DATABASE_URL (the reader the
 * migrations made) and counted independently through ADMIN_DATABASE_URL (the reader when unset), with
 * ranges ending yesterday.
 */
import pg from 'pg';
import { inject } from 'vitest';
import { yesterdayUtc } from '../../src/lib/date-range.js';
import type { Pack } from '../../src/pack.js';
import { loadPacks } from '../../src/packs.js';
import { TEST_SEED } from './database.js';
import { readerUrlFor } from './packs.js';
import { servedPacks } from './served-packs.js';

export interface Target {
  /** True when the packs are yours (QUERYGATE_PACKS), on your database (DATABASE_URL). */
  readonly own: boolean;
  readonly packs: readonly Pack[];
  /** The reader of a pack. */
  readerUrl(pack: Pack): string;
  /** The reader of the pack that holds a template. */
  readerUrlOf(templateName: string): string;
  /** An admin connection, in UTC as the reader's connections run. */
  connectAdmin(): Promise<pg.Client>;
  /** The last day with data: the widest calls end on it. */
  readonly lastDay: string;
}

export async function testTarget(): Promise<Target> {
  const specs = process.env.QUERYGATE_PACKS;
  // Your packs on your database only when you give its reader too; else on the test database.
  const own = specs !== undefined && specs !== '' && !!process.env.DATABASE_URL;
  const readerUrl = own ? process.env.DATABASE_URL : undefined;
  const packs = own ? await loadPacks(specs.split(',').map((s) => s.trim())) : await servedPacks();
  const readerOf = (pack: Pack): string => readerUrl ?? readerUrlFor(pack);
  const adminUrl = own ? (process.env.ADMIN_DATABASE_URL ?? readerUrl!) : inject('adminUrl');
  return {
    own,
    packs,
    readerUrl: readerOf,
    readerUrlOf: (name) => {
      const pack = packs.find((p) => p.templates.some((t) => t.name === name));
      if (!pack) {
        throw new Error(
          own
            ? `no pack of QUERYGATE_PACKS has a template ${name}; add it to its pack's queries/index.ts and build`
            : `no pack the tests serve has a template ${name}: add it to its pack's queries/index.ts, and name the ` +
                'pack in QUERYGATE_PACKS (the path of its pack/index module) or the configuration file ' +
                '(docs/your-own-database.md, step 9)',
        );
      }
      return readerOf(pack);
    },
    connectAdmin: async () => {
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      await admin.query("set time zone 'UTC'");
      return admin;
    },
    lastDay: own ? yesterdayUtc() : TEST_SEED.until,
  };
}
