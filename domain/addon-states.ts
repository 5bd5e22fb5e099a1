/** The states an add-on, service or cron job row reads (no dependencies: workflows import these). */

/** ADD-03: provisioning states; the live status follows. */
export const PROVISIONING_STATES = ['pending', 'processing', 'creating', 'stopped'] as const;
/** ADD-04: unhealthy values the driver may report. */
export const UNHEALTHY_STATES = ['degraded', 'degradated', 'failing', 'lost', 'crashloopbackoff', 'failed'] as const;
/** ADD-03: the live status of a ready add-on (postgres, mysql, valkey: healthy; storage: bound), a service or cron job (running). */
export const ADDON_LIVE_STATES = ['healthy', 'bound', 'running'] as const;
/** Every state an add-on, service or cron job row reads: provisioning, live, unhealthy, or in a restore, reset or deletion. */
export const ADDON_STATES = [
  ...PROVISIONING_STATES,
  ...ADDON_LIVE_STATES,
  ...UNHEALTHY_STATES,
  'restoring',
  'resetting',
  'deleting',
] as const;
export type AddonState = (typeof ADDON_STATES)[number];
