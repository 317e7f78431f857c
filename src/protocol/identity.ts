/** Who this server says it is, in `initialize`, in `server/discover` and in every modern result. */

/** Kept equal to package.json's version; a test checks it. */
export const VERSION = '0.1.0';

export const SERVER_INFO = { name: 'querygate', title: 'querygate: read-only sales queries', version: VERSION };

export const INSTRUCTIONS = [
  'querygate answers questions about sales data through fixed, read-only query tools.',
  'Every tool takes start_date and end_date (YYYY-MM-DD, inclusive, at most 90 days counted inclusively); split longer periods into several calls.',
  'Revenue figures are net: cancelled and refunded orders are left out. Customer data comes back desensitized.',
].join(' ');
