/** The fixed inputs of the start-up checks that compile a template's statements. */

/** The instant start-up checks resolve periods at: any would do, a fixed one keeps the checks repeatable. */
export const CHECK_NOW = Date.parse('2025-06-15T12:00:00Z');

/**
 * A whole-hour zone and a half-hour one: range templates that read hourly rollups in the first read
 * the rows themselves in the second, so both branches are checked.
 */
export const CHECK_ZONES = ['UTC', 'Asia/Kolkata'];

/** Two values of each dimension no real scope holds: the check sees every one of them bound. */
export const CHECK_SCOPE_VALUES = ['\u0000scope-check-1', '\u0000scope-check-2'];
