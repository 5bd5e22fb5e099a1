import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

@Entity('regions')
export class Region {
  @PrimaryGeneratedColumn('increment', { type: 'integer' }) id: number;
  @Column('text') name: string;
  @Column('text', { unique: true }) code: string;
  /** Base domain public URLs of apps in this region are built under. */
  @Column('text') domain: string;
}
