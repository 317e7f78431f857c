/**
 * support_reporting: the only relations of this pack the reader may see. Personal data leaves the
 * support schema masked, from the stored masks of 0001: initials, j***@domain, the last four digits.
 */
import { sql, type Kysely, type Migration } from 'kysely';

export const reportingViews: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`create schema if not exists support_reporting`.execute(db);
    await sql`
      create view support_reporting.tickets as
      select id, requester_id, team_id, agent_id, priority, status, created_at, first_response_at, resolved_at
        from support.tickets`.execute(db);
    await sql`create view support_reporting.teams as select id, name from support.teams`.execute(db);
    await sql`create view support_reporting.agents as select id, team_id, name_initials from support.agents`.execute(
      db,
    );
    await sql`
      create view support_reporting.requesters as
      select id, name_initials, email_masked, phone_last4 from support.requesters`.execute(db);
  },
  async down(db: Kysely<unknown>): Promise<void> {
    await sql`drop schema support_reporting cascade`.execute(db);
  },
};
