import { Context } from '@temporalio/activity';
import type { EntityManager } from 'typeorm';
import { parseAllowList } from '../domain/webhook-destination';
import { webhookHeaders } from '../domain/webhook-signature';
import {
  WEBHOOK_ATTEMPT_TIMEOUT_MS,
  WEBHOOK_DELIVERIES_KEPT,
  WEBHOOK_DISABLE_AFTER_FAILURES,
} from '../domain/webhooks';
import { one, rows } from '../entities/sql';
import { createHostResolver } from '../platform/resolver';
import type { ActivityDeps } from './deps';
import { createMailer } from './mail';
import { postWebhook, type PostResult } from './webhook-transport';

export interface DeliveryAttemptInput {
  webhookUuid: string;
  eventId: string;
  /** 1-based attempt within the cycle; the last one concludes the delivery on failure. */
  attempt: number;
  final: boolean;
  /** A delivery cycle: the first run is 1, each manual retry that restarts a finished run adds one. */
  cycle: number;
  /** Test pings: sent even when the webhook is disabled, never counted as failures. */
  ping: boolean;
}

export type DeliveryOutcome = 'retry' | 'delivered' | 'failed' | 'refused' | 'stopped' | 'gone';

export interface DeliveryAttemptResult {
  outcome: DeliveryOutcome;
  responseCode: number | null;
  /** Failures disabled the webhook and the admins have not been told yet. */
  notifyDisabled: boolean;
}

interface DeliveryRow {
  uuid: string;
  status: 'pending' | 'delivered' | 'failed';
  attempt_key: string | null;
  response_code: number | null;
  body: string;
  url: string;
  enabled: boolean;
  disable_notice_pending: boolean;
  secret_sealed: string;
}

/** Deletes finished deliveries older than the newest 50 of the webhook (pending ones stay until they finish). */
export async function pruneDeliveries(db: Pick<EntityManager, 'query'>, webhookUuid: string): Promise<void> {
  await db.query(
    `DELETE FROM webhook_deliveries WHERE webhook_uuid = $1 AND status <> 'pending'
        AND seq < (SELECT seq FROM webhook_deliveries WHERE webhook_uuid = $1 ORDER BY seq DESC OFFSET $2 LIMIT 1)`,
    [webhookUuid, WEBHOOK_DELIVERIES_KEPT - 1],
  );
}

/**
 * Records an attempt on its delivery row, once per attempt key ($2); with $6 a success
 * also resets the webhook's failure count, in the same statement. Answers whether the row
 * took it.
 */
const RECORD_ATTEMPT = `
  WITH attempt AS (
    UPDATE webhook_deliveries SET status = $3, attempts = attempts + 1, attempt_key = $2, response_code = $4, message = $5,
           last_attempt_at = now()
     WHERE uuid = $1 AND status = 'pending' AND attempt_key IS DISTINCT FROM $2 RETURNING webhook_uuid
  ), reset AS (
    UPDATE webhooks SET consecutive_failures = 0
     WHERE $6 AND uuid IN (SELECT webhook_uuid FROM attempt) AND consecutive_failures <> 0
  )
  SELECT EXISTS (SELECT 1 FROM attempt) AS recorded`;

function runId(): string {
  try {
    return Context.current().info.workflowExecution?.runId ?? 'direct';
  } catch {
    return 'direct';
  }
}

export function createWebhookActivities(deps: Pick<ActivityDeps, 'dataSource' | 'logger' | 'config' | 'secretBox'>) {
  const { dataSource, logger, config, secretBox } = deps;
  const resolver = createHostResolver(config.dnsServers);
  const mailer = createMailer(config, logger);

  /** Records one attempt on the delivery row (once per attempt key) and, when it concludes, the webhook's failure count. */
  async function record(
    row: DeliveryRow,
    input: DeliveryAttemptInput,
    key: string,
    result: PostResult,
    conclusion: 'delivered' | 'failed' | null,
  ): Promise<DeliveryAttemptResult> {
    const responseCode = result.kind === 'response' ? result.status : null;
    const outcome: DeliveryOutcome =
      conclusion === 'delivered' ? 'delivered' : result.kind === 'refused' ? 'refused' : (conclusion ?? 'retry');
    const params = [row.uuid, key, conclusion ?? 'pending', responseCode, result.message];
    if (conclusion !== 'failed') {
      // A retry to come or a success: one statement, no transaction.
      await rows(dataSource, RECORD_ATTEMPT, [...params, conclusion === 'delivered' && !input.ping]);
      if (conclusion) await pruneDeliveries(dataSource, input.webhookUuid);
      return { outcome, responseCode, notifyDisabled: false };
    }
    return dataSource.transaction(async (m) => {
      const [{ recorded }] = await rows<{ recorded: boolean }>(m, RECORD_ATTEMPT, [...params, false]);
      let notifyDisabled = false;
      if (recorded && !input.ping) {
        const webhook = await one<{
          enabled: boolean;
          disable_notice_pending: boolean;
          consecutive_failures: number;
        }>(
          m,
          `UPDATE webhooks SET consecutive_failures = consecutive_failures + 1,
                  enabled = enabled AND consecutive_failures + 1 < $2,
                  disabled_at = CASE WHEN enabled AND consecutive_failures + 1 >= $2 THEN now() ELSE disabled_at END,
                  disable_notice_pending = disable_notice_pending OR (enabled AND consecutive_failures + 1 >= $2),
                  updated_at = CASE WHEN enabled AND consecutive_failures + 1 >= $2 THEN now() ELSE updated_at END
            WHERE uuid = $1 RETURNING enabled, disable_notice_pending, consecutive_failures`,
          [input.webhookUuid, WEBHOOK_DISABLE_AFTER_FAILURES],
        );
        notifyDisabled = Boolean(webhook && !webhook.enabled && webhook.disable_notice_pending);
        if (webhook && !webhook.enabled && notifyDisabled) {
          logger.warn(
            { webhookUuid: input.webhookUuid, failures: webhook.consecutive_failures },
            'webhook disabled after consecutive failed deliveries',
          );
        }
      }
      await pruneDeliveries(m, input.webhookUuid);
      return { outcome, responseCode, notifyDisabled };
    });
  }

  return {
    /**
     * One delivery attempt of an event to a webhook: opens the secret, signs the stored
     * body (Standard Webhooks), POSTs it to the freshly resolved and vetted address, and
     * records status, response_code, message, attempts and last_attempt_at on the one
     * delivery row of that event. A 2xx delivers; a destination that is now private
     * fails the delivery at once; other failures are retried by the workflow until the
     * last attempt, which fails the delivery and counts towards disabling the webhook.
     */
    async attemptWebhookDelivery(input: DeliveryAttemptInput): Promise<DeliveryAttemptResult> {
      const key = `${runId()}/${input.cycle}/${input.attempt}`;
      const row = await one<DeliveryRow>(
        dataSource,
        `SELECT d.uuid, d.status, d.attempt_key, d.response_code, d.body, w.url, w.enabled, w.disable_notice_pending, w.secret_sealed
           FROM webhook_deliveries d JOIN webhooks w ON w.uuid = d.webhook_uuid
          WHERE d.webhook_uuid = $1 AND d.event_id = $2`,
        [input.webhookUuid, input.eventId],
      );
      if (!row) return { outcome: 'gone', responseCode: null, notifyDisabled: false };
      if (row.attempt_key === key || row.status !== 'pending') {
        // This attempt was already recorded (the activity is being retried), or another run concluded the delivery.
        const outcome: DeliveryOutcome = row.status === 'pending' ? 'retry' : row.status;
        return { outcome, responseCode: row.response_code, notifyDisabled: !row.enabled && row.disable_notice_pending };
      }
      if (!input.ping && !row.enabled) {
        const stopped = await rows(
          dataSource,
          `UPDATE webhook_deliveries SET status = 'failed', message = 'the webhook is disabled: delivery stopped', attempt_key = $2
            WHERE uuid = $1 AND status = 'pending' RETURNING uuid`,
          [row.uuid, key],
        );
        if (stopped.length > 0) await pruneDeliveries(dataSource.manager, input.webhookUuid);
        return { outcome: 'stopped', responseCode: row.response_code, notifyDisabled: row.disable_notice_pending };
      }
      const secret = secretBox.open(row.secret_sealed);
      const timestamp = Math.floor(Date.now() / 1000);
      const result = await postWebhook({
        url: row.url,
        body: row.body,
        headers: webhookHeaders(secret, input.eventId, timestamp, row.body),
        allow: parseAllowList(config.webhookAllowCidrs),
        resolver,
        timeoutMs: WEBHOOK_ATTEMPT_TIMEOUT_MS,
      });
      const ok = result.kind === 'response' && result.status >= 200 && result.status < 300;
      const conclusion = ok ? 'delivered' : result.kind === 'refused' || input.final ? 'failed' : null;
      logger.info(
        {
          webhookUuid: input.webhookUuid,
          eventId: input.eventId,
          attempt: input.attempt,
          result: result.kind,
          status: result.kind === 'response' ? result.status : null,
          conclusion,
        },
        'webhook delivery attempt',
      );
      return record(row, input, key, result, conclusion);
    },

    /** E-mails the workspace admins (owner and admin members) that failures disabled a webhook; once. */
    async notifyWebhookDisabled(webhookUuid: string): Promise<number> {
      const webhook = await one<{
        url: string;
        workspace_uuid: string;
        workspace_name: string;
        disable_notice_pending: boolean;
        enabled: boolean;
        consecutive_failures: number;
      }>(
        dataSource,
        `SELECT w.url, w.workspace_uuid, ws.name AS workspace_name, w.disable_notice_pending, w.enabled, w.consecutive_failures
           FROM webhooks w JOIN workspaces ws ON ws.uuid = w.workspace_uuid WHERE w.uuid = $1`,
        [webhookUuid],
      );
      if (!webhook || !webhook.disable_notice_pending) return 0;
      const admins = await rows<{ email: string }>(
        dataSource,
        `SELECT DISTINCT u.email FROM members m JOIN roles r ON r.uuid = m.role_uuid JOIN users u ON u.uuid = m.user_uuid
          WHERE m.workspace_uuid = $1 AND r.builtin AND r.name IN ('owner', 'admin') ORDER BY u.email`,
        [webhook.workspace_uuid],
      );
      const last = await one<{ message: string; response_code: number | null }>(
        dataSource,
        `SELECT message, response_code FROM webhook_deliveries WHERE webhook_uuid = $1 AND status = 'failed' ORDER BY last_attempt_at DESC NULLS LAST LIMIT 1`,
        [webhookUuid],
      );
      if (admins.length > 0) {
        await mailer.send({
          to: admins.map((a) => a.email),
          subject: `[Berth] Webhook disabled after ${webhook.consecutive_failures} failed deliveries: ${webhook.url}`,
          text: [
            `The webhook ${webhookUuid} of workspace "${webhook.workspace_name}" delivering to`,
            `  ${webhook.url}`,
            `was disabled after ${webhook.consecutive_failures} consecutive deliveries failed, each after all of its retries.`,
            last
              ? `The last failure: ${last.response_code === null ? 'no response' : `HTTP ${last.response_code}`}${last.message ? ` - ${last.message}` : ''}`
              : '',
            '',
            'Its delivery history is kept: GET /api/v1/webhooks/' + webhookUuid + '/deliveries.',
            'Deliveries resume from the next event once it is re-enabled:',
            `  PUT /api/v1/webhooks/${webhookUuid} {"enabled": true}`,
          ].join('\n'),
        });
      } else {
        logger.warn({ webhookUuid }, 'webhook disabled, but the workspace has no owner or admin to e-mail');
      }
      await dataSource.query(`UPDATE webhooks SET disable_notice_pending = false WHERE uuid = $1`, [webhookUuid]);
      return admins.length;
    },
  };
}
