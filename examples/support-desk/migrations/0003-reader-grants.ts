/**
 * The reader's rights in this pack: USAGE on support_reporting and SELECT on the columns the
 * templates read, nothing in support. A template that needs another column says so here, in a
 * migration, where a reviewer sees it. (The engine made the role itself safe before this runs.)
 */
import { sql, type Kysely, type Migration } from 'kysely';

export function readerGrants(role: string): Migration {
  const reader = sql.id(role);
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await sql`revoke all on schema support_reporting from public`.execute(db);
      await sql`revoke all on all tables in schema support_reporting from public`.execute(db);
      await sql`grant usage on schema support_reporting to ${reader}`.execute(db);
      await sql`
        grant select (id, requester_id, team_id, agent_id, priority, status, created_at, first_response_at, resolved_at)
           on support_reporting.tickets to ${reader}`.execute(db);
      await sql`grant select (id, name) on support_reporting.teams to ${reader}`.execute(db);
      await sql`grant select (id, team_id, name_initials) on support_reporting.agents to ${reader}`.execute(db);
      await sql`
        grant select (id, name_initials, email_masked, phone_last4) on support_reporting.requesters to ${reader}`.execute(
        db,
      );
    },
    async down(db: Kysely<unknown>): Promise<void> {
      await sql`revoke all on all tables in schema support_reporting from ${reader}`.execute(db);
      await sql`revoke all on schema support_reporting from ${reader}`.execute(db);
    },
  };
}
