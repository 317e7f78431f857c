/**
 * A pack is everything querygate knows about one database: its table types, its personal columns,
 * its migrations and reader grants, its query templates, its demo seed and its words for a model.
 * The engine in src/ knows no table; it serves whatever packs it is given, and checks each one
 * (templates, personal columns, reader role) before a single call is served.
 */
import type { Migration } from 'kysely';
import type pg from 'pg';
import type { ResourceTemplate } from './content/declarations.js';
import { checkRollupDeclaration, type RollupDeclaration } from './db/rollups/declaration.js';
import type { Logger } from './lib/logger.js';
import type { AnyPrompt } from './content/prompts.js';
import type { PersonalKind } from './lib/masking.js';
import type {
  AnyTemplate,
  DataScopeDimension,
  HighWaterMark,
  PersonalColumn,
  PersonalColumns,
  QueryTemplate,
  SourceColumnOf,
} from './registry/types.js';
import type { AnyReport } from './reports.js';

// A pack declares these; they live with the template's types, which the registry stands on.
export type { DataScopeDimension, HighWaterMark, PersonalColumn, PersonalColumns, PersonalKind, SourceColumnOf };

/**
 * The rest of a pack's classification of its readable columns: every column the reader can read that
 * holds nothing personal, as "schema.table.column". Together with the personal columns it must name
 * every column the reader role can read in the pack's schemas: one in neither list stops `serve` and
 * fails `doctor` (fail closed: a raw column added to a view is never served unclassified).
 */
export type NotPersonalColumns<DB = unknown> = unknown extends DB ? readonly string[] : readonly SourceColumnOf<DB>[];

export interface SeedRequest {
  /** How many of the pack's main rows to create; the pack's default when omitted. */
  readonly count?: number;
  /** The last day with data, YYYY-MM-DD (UTC). */
  readonly until: string;
  /** Replace the pack's existing data instead of refusing a database that holds some. */
  readonly replace: boolean;
}

/** A pack's deterministic demo data. */
export interface PackSeed {
  /** What `count` counts, in the plural: the CLI and the logs say it. */
  readonly unit: string;
  readonly defaultCount: number;
  /**
   * How many the test database holds: `npm test` seeds every pack it serves through this seed, with
   * this count (defaultCount when omitted) and a fixed last day. Small keeps the suite quick.
   */
  readonly testCount?: number;
  /**
   * For the test database and the embedded demo database only, before the pack's migrations: creates
   * the tables they build their views on, for a pack over a database it does not own (whose
   * migrations create views only). Never run against DATABASE_URL or ADMIN_DATABASE_URL. Idempotent.
   */
  createTables?(adminUrl: string, logger: Logger): Promise<void>;
  /** True when the pack's tables hold no data yet (checked through the admin connection). */
  isEmpty(admin: pg.Client): Promise<boolean>;
  /** Loads the data and says what it loaded. */
  run(adminUrl: string, request: SeedRequest, logger: Logger): Promise<Record<string, number>>;
}

/** One figure a pack's tools return, as querygate://metrics defines it. */
export interface MetricDefinition {
  /** The name the tools' results use, snake_case. */
  readonly name: string;
  readonly title: string;
  /** What it counts or sums, what it leaves out and how it is computed, for a model and an analyst. */
  readonly definition: string;
  /** What it is measured in, as a phrase: "money, in the row's currency". */
  readonly unit: string;
}

/** What one view holds and what its columns mean, for querygate://schema. */
export interface ViewDocumentation {
  readonly description: string;
  /** By column name; a personal column may not be named (the server refuses to start). */
  readonly columns: Readonly<Record<string, string | undefined>>;
}

/**
 * The documentation of a pack's views, keyed "schema.view": with the pack's generated table types, a
 * view or column the database lacks is a type error.
 */
export type ViewsDocumentation<DB = unknown> = unknown extends DB
  ? Readonly<Record<string, ViewDocumentation | undefined>>
  : {
      readonly [V in keyof DB & string]?: {
        readonly description: string;
        readonly columns: { readonly [C in keyof DB[V] & string]?: string };
      };
    };

export interface Pack {
  /** Lower-case name, unique among the packs a server serves ("sales", "support_desk"). */
  readonly name: string;
  /** What the pack answers questions about, for the server's title ("sales", "the support desk"). */
  readonly subject: string;
  /** What a model should know before it picks one of the pack's tools (units, net figures, limits). */
  readonly instructions: string;
  /** The schemas whose relations the reader role reads; it must read nothing outside them. */
  readonly readerSchemas: readonly [string, ...string[]];
  readonly personalColumns: PersonalColumns;
  /**
   * Every other column the reader can read, declared as not personal: with personalColumns, the pack
   * classifies every readable column, and `serve` refuses to start while one is in neither.
   */
  readonly notPersonalColumns?: NotPersonalColumns;
  /**
   * The dimensions a caller's view of the data may be narrowed along; give the same list to templateKit.
   * A template applies those it can (its `dataScope`); one that cannot apply a dimension a caller is
   * scoped on is not served to it.
   */
  readonly dataScope?: readonly DataScopeDimension[];
  readonly templates: readonly AnyTemplate[];
  /** Reports built from the templates (src/reports.ts), served as tools beside them. */
  readonly reports?: readonly AnyReport[];
  /** The pack's migrations, applied in name order through the admin role. */
  readonly migrations: (options: { readonly readerRole: string }) => Record<string, Migration>;
  /** The table that records the pack's applied migrations; `querygate_<name>_migrations` by default. */
  readonly migrationTable?: string;
  /**
   * The rollups the pack declares (src/db/rollups/): one of its migrations makes them with
   * rollupMigration; `querygate check-rollups` compares each with its base rows.
   */
  readonly rollups?: readonly RollupDeclaration[];
  readonly seed?: PackSeed;
  /**
   * The planner cost no template may exceed over its widest allowed arguments (EXPLAIN, checked by
   * `doctor` and by the contract tests).
   */
  readonly maxPlanCost: number;
  /**
   * The fewest people a released protected count other than 0 stands for (5 when unset; see
   * src/lib/protected-counts.ts); the configuration file's small_group_threshold overrides it.
   */
  readonly smallGroupThreshold?: number;
  /** The figures the tools return, defined for querygate://metrics. */
  readonly metrics?: readonly MetricDefinition[];
  /** The views the reader reads and what their columns mean, for querygate://schema. */
  readonly views?: ViewsDocumentation;
  /** Prompts offered to the user (prompts/list and prompts/get). */
  readonly prompts?: readonly AnyPrompt[];
  /** Resources named by a URI template (resources/templates/list), read through the pack's tools. */
  readonly resourceTemplates?: readonly ResourceTemplate[];
}

/** Checks a pack's own shape (its rollups' declarations, in one line each); the registry checks its templates. */
export function definePack(pack: Pack): Pack {
  for (const rollup of pack.rollups ?? []) checkRollupDeclaration(rollup);
  return pack;
}

/**
 * The one helper a pack's templates are written with, bound to the pack's table types, personal
 * columns and data-scope dimensions: a column a template names that the database lacks, or a
 * dimension the pack does not declare, is a type error, and every template carries the declarations
 * the registry checks it against. With `dataThrough`, the pack's high-water mark, every answer says
 * how far the data reach and a running range is cut where they stop.
 */
export function templateKit<DB, Dimension extends string = never>(
  personal: PersonalColumns<DB>,
  dimensions: readonly DataScopeDimension<Dimension>[] = [],
  dataThrough?: HighWaterMark<DB>,
): <Args, Output extends Record<string, unknown>>(
  template: Omit<QueryTemplate<Args, Output, DB>, 'personal' | 'dimensions' | 'dataScope' | 'dataThrough'> & {
    readonly dataScope?: readonly Dimension[];
  },
) => QueryTemplate<Args, Output, DB> {
  return (template) => ({
    ...template,
    personal: personal as PersonalColumns,
    dimensions,
    ...(dataThrough ? { dataThrough } : {}),
  });
}
