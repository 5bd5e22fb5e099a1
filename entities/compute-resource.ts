import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

export interface Plan {
  name: string;
  code_name: string;
  description: string;
  plan_type: string;
  ram_size: number;
  disk_size: number;
  cpu_size: number;
  unit_price: number;
}

/** bigint columns read as numbers (byte counts stay far below 2^53). */
export const bigintNumber = { to: (v: number) => v, from: (v: string | null) => (v === null ? v : Number(v)) };

export interface Component {
  name: string;
  code_name: string;
  unit_price: number;
}

/**
 * The contract's `platform` object: a compute resource workloads run on. Capacity is in
 * cores (cpu) and bytes (ram, disk); used capacity is the sum of allocations on it.
 */
@Entity('compute_resources')
export class ComputeResource {
  @PrimaryColumn('uuid') uuid: string;
  @Column('uuid') workspace_uuid: string;
  @Column('integer') region_id: number;
  @Column('text') name: string;
  @Column('text', { default: 'active' }) state: string;
  @Column('text', { array: true, default: () => "'{}'" }) labels: string[];
  @Column('double precision') total_cpu_size: number;
  @Column('bigint', { transformer: bigintNumber })
  total_ram_size: number;
  @Column('bigint', { transformer: bigintNumber })
  total_disk_size: number;
  @Column('jsonb') plan: Plan;
  @Column('jsonb', { default: () => "'[]'" }) components: Component[];
  @Column('uuid', { nullable: true }) created_by_member_uuid: string | null;
  @CreateDateColumn({ type: 'timestamptz' }) created_at: Date;
  @UpdateDateColumn({ type: 'timestamptz' }) updated_at: Date;
}

/** Capacity a workload holds on a compute resource (apps, add-ons, buckets, ...). */
@Entity('resource_allocations')
export class ResourceAllocation {
  @PrimaryColumn('uuid') owner_uuid: string;
  @Column('text') owner_type: string;
  @Column('uuid') resource_uuid: string;
  @Column('double precision', { default: 0 }) cpu_size: number;
  @Column('bigint', { default: 0, transformer: bigintNumber })
  ram_size: number;
  @Column('bigint', { default: 0, transformer: bigintNumber })
  disk_size: number;
}
