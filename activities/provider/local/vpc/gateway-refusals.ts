import { ApplicationFailure } from '@temporalio/common';
import { accessProviderUnreachable } from '../../../../domain/vpc';

/** The access kinds' connectors need their providers' services: the gateway fails with the reason, for good. */
export const providerUnreachable = (kind: string): ApplicationFailure =>
  ApplicationFailure.nonRetryable(accessProviderUnreachable(kind), 'ProviderUnreachable');
