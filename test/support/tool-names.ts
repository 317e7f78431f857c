/**
 * The names of the tools the shipped packs serve, read from the packs themselves, in the order a
 * server lists them (a pack's templates, then its reports). Suites that expect "every sales tool"
 * take these, so a tool added to a pack needs no edit here; the one list written out by hand is the
 * contract below.
 */
import { supportDeskPack } from '../../examples/support-desk/pack/index.js';
import { salesPack } from '../../pack/index.js';
import type { Pack } from '../../src/pack.js';

const queryToolsOf = (pack: Pack): readonly string[] => pack.templates.map((t) => t.name);
const reportToolsOf = (pack: Pack): readonly string[] => (pack.reports ?? []).map((r) => r.name);

/** The sales pack's query tools, in the order it lists them. */
export const SALES_QUERY_TOOLS: readonly string[] = queryToolsOf(salesPack);
/** The sales pack's report tools, listed after its queries. */
export const SALES_REPORT_TOOLS: readonly string[] = reportToolsOf(salesPack);
/** Every tool a server of the sales pack alone lists, in its order. */
export const SALES_TOOLS: readonly string[] = [...SALES_QUERY_TOOLS, ...SALES_REPORT_TOOLS];
/** The support-desk example's query tools, in the order it lists them. */
export const SUPPORT_QUERY_TOOLS: readonly string[] = queryToolsOf(supportDeskPack);

/**
 * Pinned on purpose: the five query tools the sales pack promises its users by name (test/registry/registry.test.ts
 * holds the pack to it). Everything else derives from the pack, so that a renamed or dropped tool fails
 * here, once, and not in every suite that lists tools.
 */
export const CONTRACTED_SALES_QUERY_TOOLS: readonly string[] = [
  'query_order_count',
  'query_sales',
  'query_top_products',
  'query_recent_orders',
  'query_metrics',
];
