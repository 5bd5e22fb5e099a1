import nodemailer, { type Transporter } from 'nodemailer';
import type { Logger } from 'pino';
import type { Config } from '../platform/config';

export interface MailMessage {
  to: string[];
  subject: string;
  text: string;
}

export interface Mailer {
  send(message: MailMessage): Promise<void>;
}

/**
 * Outgoing mail through nodemailer: SMTP at BERTH_SMTP_URL (`smtp://user:pass@host:port`,
 * `smtps://` for implicit TLS), or, when unset (the embedded default), a JSON transport
 * whose messages are written to the log instead of being sent.
 */
export function createMailer(config: Pick<Config, 'smtpUrl' | 'mailFrom'>, logger: Logger): Mailer {
  let transport: Transporter | undefined;
  const get = () =>
    (transport ??= config.smtpUrl
      ? nodemailer.createTransport(config.smtpUrl)
      : nodemailer.createTransport({ jsonTransport: true }));
  return {
    async send(message) {
      const info = await get().sendMail({
        from: config.mailFrom,
        to: message.to,
        subject: message.subject,
        text: message.text,
      });
      if (config.smtpUrl) {
        logger.info({ to: message.to, subject: message.subject, messageId: info.messageId }, 'mail sent');
      } else {
        logger.info(
          {
            to: message.to,
            subject: message.subject,
            mail: JSON.parse(String((info as { message?: unknown }).message)),
          },
          'mail (BERTH_SMTP_URL unset: logged, not sent)',
        );
      }
    },
  };
}
