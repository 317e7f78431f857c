import { zoneRulesAgreement, type ZoneRulesAgreement } from '../db/zone-rules.js';
import type { ReaderDatabase } from '../db/connect.js';
import type { Logger } from '../lib/logger.js';

/** YYYY-MM-DD of the day a year before an instant: the zone rules are compared from there for two years. */
function aYearAgo(now: Date): string {
  return new Date(now.getTime() - 365 * 86_400_000).toISOString().slice(0, 10);
}

/** Tells the operator where PostgreSQL's zone rules differ from the ones querygate cuts days with. */
function reportZoneRules(timeZone: string, agreement: ZoneRulesAgreement, logger: Logger): void {
  const nodeZoneData = process.versions.tz ?? 'unknown';
  if (!agreement.known) {
    logger.info('the database does not know the reporting time zone; querygate does not need it', {
      time_zone: timeZone,
    });
  } else if (agreement.disagreeing.length > 0) {
    logger.warn(
      'Node and the database disagree on when some days start in the reporting time zone; querygate uses Node\'s rules, so a check with "at time zone" in psql may differ on those days (update the older of the two)',
      {
        time_zone: timeZone,
        node_zone_data: nodeZoneData,
        days: agreement.disagreeing.length,
        first: agreement.disagreeing[0],
        last: agreement.disagreeing.at(-1),
      },
    );
  }
}

/** A diagnostic only: whatever happens to it, the server's readiness does not depend on it. */
export async function compareZoneRules(reader: ReaderDatabase, timeZone: string, logger: Logger): Promise<void> {
  await zoneRulesAgreement(reader, timeZone, aYearAgo(new Date()), 731).then(
    (agreement) => reportZoneRules(timeZone, agreement, logger),
    (err: unknown) => logger.warn('could not compare the zone rules with the database', { reason: String(err) }),
  );
}
