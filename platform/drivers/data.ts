/** Data-plane operations for databases, caches and storage volumes (add-ons and services). */

import type { AddonState, DataType } from '../../domain/data';
import type { AppRunSpec } from './apps';

/** The engines a data driver runs: the add-on data types of domain/data.ts. */
export type DataEngine = DataType;

export interface ClusterSpec {
  /** Cluster id chosen by the control plane (the add-on's cluster_id). */
  id: string;
  engine: DataEngine;
  cpuSize: number;
  ramSize: number;
  publicAccess: boolean;
  backups: boolean;
  /** The generated password in plain text: opened inside the activity, never in workflow data. */
  password: string | null;
  /** The generated user (postgres, mysql) and database the credentials name. */
  username?: string | null;
  database?: string | null;
}

export interface BackupInfo {
  name: string;
  taken_at: Date;
  size: number;
}

export interface ClusterStatus {
  /** `creating` while provisioning; then the live status (healthy, bound, running) or an unhealthy value. */
  status: AddonState;
  ready: boolean;
  /** Where clients reach it, when the driver serves it for real (the simulated driver: absent). */
  endpoint?: { host: string; port: number; public_host: string };
}

export type RestoreSource = { backupName: string } | { targetTime: Date } | { latest: true };

export interface JobRequest {
  appUuid: string;
  command: string;
  run: AppRunSpec;
}

export interface JobRun {
  exitCode: number;
  log: string;
}

export interface DataDriver {
  /** Whether this driver can run the engine: null, or the reason it cannot (what to install), for a 422. */
  supports(engine: DataEngine): string | null;
  /** Creates the cluster (idempotent by id). */
  provision(spec: ClusterSpec): Promise<void>;
  /** Creates a read replica of `primaryId` streaming from it, with the primary's credentials. */
  createReplica(spec: ClusterSpec & { primaryId: string }): Promise<void>;
  status(id: string): Promise<ClusterStatus>;
  setPublicAccess(id: string, on: boolean): Promise<void>;
  /** Stops (scales to zero, data kept) or starts the cluster. */
  setRunning(id: string, running: boolean): Promise<void>;
  /** Turns continuous backups on or off; turning them on takes a first base backup. */
  setBackups(id: string, on: boolean): Promise<void>;
  /** Takes a base backup now (the cluster also takes one when backups turn on). */
  backupNow(id: string): Promise<BackupInfo>;
  listBackups(id: string): Promise<BackupInfo[]>;
  /** The point-in-time recovery window, null when the cluster has no backups. */
  recoveryWindow(id: string): Promise<{ earliest: Date; latest: Date } | null>;
  /**
   * Restores `sourceId`'s backup into `targetId`: the same id replaces the database in
   * place, another id creates a new cluster from `targetSpec` beside the old one.
   * Answers the backup (or point in time) restored.
   */
  restore(input: {
    sourceId: string;
    targetId: string;
    from: RestoreSource;
    targetSpec?: ClusterSpec;
  }): Promise<{ restored: string }>;
  /** Drops every piece of data (and its backups): it does not come back. */
  reset(id: string): Promise<void>;
  /** Removes the cluster and its data. */
  delete(id: string): Promise<void>;
  /** Creates a directory of a shared volume if missing (sub_path mounts). */
  ensureSubPath(id: string, path: string): Promise<void>;
  /** Copies a storage volume's files into another, provisioned, volume (clone_data). */
  copyVolume(sourceId: string, targetId: string): Promise<void>;
  /**
   * Runs a cron job's command in the app's current release, run as `run` says (the app's
   * environment, quota and volumes now); answers its exit code and log (the end of its
   * output). No release yet: a non-retryable failure.
   */
  runJob(input: JobRequest): Promise<JobRun>;
}
