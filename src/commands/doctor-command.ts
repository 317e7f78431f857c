import { openDatabase } from '../app/index.js';
import type { Config } from '../config.js';
import { connectReader, redactUrl } from '../db/connect.js';
import {
  checkJobRoleSafety,
  checkReaderSafety,
  dataScopeChecks,
  explainPacks,
  formatReport,
  planFails,
  readerConnectionCheck,
  readerScopeOf,
  templatesCheck,
} from '../db/doctor/index.js';
import { todayUtc } from '../lib/date-range.js';
import type { Logger } from '../lib/logger.js';
import type { Pack } from '../pack.js';

/** `querygate doctor`: every check of the served packs and their roles, printed; exit code 1 when one fails. */
export async function doctor(config: Config, packs: readonly Pack[], logger: Logger): Promise<void> {
  const database = await openDatabase(config, packs, logger);
  const reader = connectReader(database.readerUrl, config, logger);
  try {
    const scope = readerScopeOf(packs);
    const checks = [
      templatesCheck(packs),
      ...dataScopeChecks(packs),
      ...(await checkReaderSafety(database.readerUrl, scope, { sampleValues: true })),
      ...(database.jobsUrl === undefined
        ? [
            {
              name: 'job store configured',
              ok: true,
              warning: true,
              detail: 'no job role to check: the reports that run as jobs are served only synchronously',
              fix: 'set QUERYGATE_JOBS_URL, or QUERYGATE_JOBS_PASSWORD beside DATABASE_URL',
            },
          ]
        : await checkJobRoleSafety(database.jobsUrl, scope)),
    ];
    // The plans run on the server's own reader connection: when it does not open, say so once, not once per plan.
    const connection = await readerConnectionCheck(reader);
    checks.push(connection);
    const plans = connection.ok ? await explainPacks(reader, packs, { timeZone: config.timeZone }, todayUtc()) : [];
    process.stdout.write(`${formatReport(redactUrl(database.readerUrl), checks, plans)}\n`);
    if (checks.some((c) => !c.ok) || plans.some(planFails)) process.exitCode = 1;
  } finally {
    await reader.close();
    await database.stop();
  }
}
