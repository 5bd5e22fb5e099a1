/** The quota of an app created without one: a quarter core, 256 MiB, 1 GiB of disk, one replica. */
export const DEFAULT_QUOTA = { cpu_size: 0.25, ram_size: 256 * 2 ** 20, disk_size: 2 ** 30, replicas: 1 };
