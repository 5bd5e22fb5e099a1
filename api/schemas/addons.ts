import * as yup from 'yup';
import { DATA_TYPES } from '../../domain/data';
import { bool, num, obj, oneOf, str, uuid } from './common';

const quota = obj({
  cpu_size: num().positive().max(64),
  ram_size: num()
    .positive()
    .max(512 * 2 ** 30),
  disk_size: num()
    .positive()
    .max(16 * 2 ** 40),
}).default(undefined);

/** Fields shared by add-on and service creation. */
const dataFields = {
  type: oneOf(DATA_TYPES).required(),
  label: str().trim().min(1).max(100),
  name: str().matches(/^[a-z][a-z0-9-]{0,39}$/, '${path} must be lowercase letters, digits and dashes (at most 40)'),
  quota,
  backup_enabled: bool(),
  public_access: bool(),
  s3_enabled: bool(),
  sub_path: str().max(1000),
  access_mode: oneOf(['shared', 'exclusive'] as const),
};

export const addonCreateBody = obj(dataFields);
export const serviceCreateBody = obj({
  ...dataFields,
  label: dataFields.label.required(),
  resource_id: uuid().required(),
  project_id: uuid(),
});
export const addonUpdateBody = obj({
  label: dataFields.label,
  quota,
  backup_enabled: bool(),
  public_access: bool(),
  s3_enabled: bool(),
});
export const serviceUpdateBody = obj({
  ...addonUpdateBody.fields,
  project_id: uuid().nullable(),
} as typeof addonUpdateBody.fields & { project_id: ReturnType<typeof uuid> });
export const publicAccessBody = obj({ public_access: bool().required() });
export const restoreBody = obj({
  backup_name: str().min(1).max(200),
  target_time: str().max(64),
  to_new_cluster: bool(),
});
export const replicaBody = obj({
  cpu_size: num().positive().max(64).required(),
  ram_size: num()
    .positive()
    .max(512 * 2 ** 30)
    .required(),
});
export const mountBody = obj({
  app_uuid: uuid().required(),
  mount_path: str()
    .matches(/^\/[A-Za-z0-9._/-]{0,254}$/, '${path} must be an absolute path')
    .required(),
  sub_path: str().max(1000),
  access_mode: oneOf(['shared', 'exclusive'] as const),
});

export type AddonCreateBody = yup.InferType<typeof addonCreateBody>;
export type ServiceCreateBody = yup.InferType<typeof serviceCreateBody>;
export interface AddonUpdateBody {
  label?: string;
  quota?: { cpu_size?: number; ram_size?: number; disk_size?: number };
  backup_enabled?: boolean;
  public_access?: boolean;
  s3_enabled?: boolean;
  project_id?: string | null;
}
export type RestoreBody = yup.InferType<typeof restoreBody>;
export const stateBody = obj({ action: oneOf(['start', 'stop'] as const).required() });
