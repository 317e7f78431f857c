/**
 * The safety self-check: connects as the configured reader and proves it can read no more than the
 * templates need and can change nothing. `querygate doctor` prints it; `serve` runs it at start-up.
 * Each check is a file of this folder; this one is the list of them, in the order a report shows them.
 */
import type pg from 'pg';
import type { Pack, PersonalColumn } from '../../pack.js';
import { textInputProbes } from '../../registry/checks/text-inputs.js';
import { createCompiler } from '../connect.js';
import { noAdminFunctions } from './admin-functions.js';
import { declaredSources, rollupProbe } from './declared-sources.js';
import type { ReaderCheck, ReaderScope, SafetyCheck } from './check.js';
import { createsNothing } from './creates-nothing.js';
import { noDangerousRoles } from './dangerous-roles.js';
import { noJobStoreAccess } from './job-store-closed.js';
import { leafRoleChecks } from './leaf-role.js';
import { noTableWrites } from './no-table-writes.js';
import { otherDatabases } from './other-databases.js';
import { ownSettings } from './own-settings.js';
import { ownsNothing } from './owns-nothing.js';
import { classificationChecks, personalDataChecks } from './personal-data.js';
import { poolerCheck } from './pooler-mode.js';
import { readsOnlyPackSchemas } from './reads-only-pack-schemas.js';
import { connectAsRole } from './role-connection.js';
import { sessionLimits } from './session-limits.js';
import { writesRefused } from './writes-refused.js';

export type { ReaderScope, SafetyCheck } from './check.js';
export { dataScopeChecks } from './data-scope.js';
export { checkJobRoleSafety, JOB_ROLE_CHECK } from './job-role-safety.js';
export { explainPacks, planFails, type PlanCost } from './plans.js';
export { READER_CONNECTION_CHECK, readerConnectionCheck } from './reader-connection.js';
export { formatReport } from './report.js';
export { templatesCheck } from './templates.js';

/** The reader's checks after the leaf-role ones, in order: its rights, then its data, then its settings, then real writes. */
const READER_CHECKS: readonly ReaderCheck[] = [
  noDangerousRoles,
  ownsNothing,
  readsOnlyPackSchemas,
  noAdminFunctions,
  noTableWrites,
  createsNothing,
  noJobStoreAccess,
  otherDatabases,
  personalDataChecks,
  classificationChecks,
  sessionLimits,
  ownSettings,
  declaredSources,
  writesRefused,
];

/** The scope of a server that serves these packs. */
export function readerScopeOf(packs: readonly Pack[]): ReaderScope {
  return {
    schemas: [...new Set(packs.flatMap((p) => p.readerSchemas))],
    personal: Object.assign({}, ...packs.map((p) => p.personalColumns)) as Record<string, PersonalColumn>,
    notPersonal: packs.flatMap((p) => p.notPersonalColumns ?? []),
    probes: packs.flatMap((p) => [
      ...p.templates.flatMap((t) => [...(t.probes?.(createCompiler()) ?? []), ...textInputProbes(t)]),
      ...(p.rollups ?? []).filter((d) => d.derived === undefined).map((d) => rollupProbe(createCompiler(), d)),
    ]),
  };
}

/**
 * Runs every check over one plain connection as the reader, without the startup parameters the
 * server adds, so that the role's own settings are what is checked. `sampleValues` (doctor's) also
 * reads the values of the columns declared not personal; `serve` judges them by name only, so that
 * its start reads no table a writer may hold locked, and costs the same at any size. (The declared
 * sources are planned with LIMIT 0, which reads no row and waits at most a moment for a lock.)
 */
export async function checkReaderSafety(
  readerUrl: string,
  scope: ReaderScope,
  options: { readonly sampleValues?: boolean } = {},
): Promise<SafetyCheck[]> {
  const client = await connectAsRole(readerUrl);
  try {
    const checks = await runReaderChecks(client, scope, options.sampleValues ?? false);
    checks.push(await poolerCheck(client, readerUrl));
    return checks;
  } finally {
    await client.end().catch(() => undefined);
  }
}

// One after the other: the checks share one connection, which runs one query at a time.
async function runReaderChecks(client: pg.Client, scope: ReaderScope, sampleValues: boolean): Promise<SafetyCheck[]> {
  const { under, checks } = await leafRoleChecks(client);
  const reader = { ...under, scope, sampleValues };
  for (const check of READER_CHECKS) checks.push(...[await check(reader)].flat());
  return checks;
}
