/** The quota of an app created without one: half a core, 512 MiB, 1 GiB of disk, one replica. */
export const DEFAULT_QUOTA = { cpu_size: 0.5, ram_size: 512 * 2 ** 20, disk_size: 2 ** 30, replicas: 1 };
