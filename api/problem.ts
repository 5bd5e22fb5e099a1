/**
 * Errors as RFC 9457 problem details. Handlers throw a Problem; the error middleware
 * renders it as application/problem+json with the request id as `instance`.
 */
export interface FieldError {
  path: string;
  message: string;
}

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  410: 'Gone',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export class Problem extends Error {
  readonly status: number;
  readonly title: string;
  readonly detail: string;
  readonly errors?: FieldError[];
  readonly headers: Record<string, string>;
  readonly extra: Record<string, unknown>;

  constructor(
    status: number,
    detail: string,
    options: {
      errors?: FieldError[];
      headers?: Record<string, string>;
      extra?: Record<string, unknown>;
      title?: string;
    } = {},
  ) {
    super(detail);
    this.status = status;
    this.title = options.title ?? TITLES[status] ?? 'Error';
    this.detail = detail;
    this.errors = options.errors;
    this.headers = options.headers ?? {};
    this.extra = options.extra ?? {};
  }

  /** The problem `type`: a stable URI per status. */
  get type(): string {
    return `https://berth.dev/problems/${this.title.toLowerCase().replace(/[^a-z]+/g, '-')}`;
  }

  body(instance: string): Record<string, unknown> {
    return {
      type: this.type,
      title: this.title,
      status: this.status,
      detail: this.detail,
      instance,
      ...(this.errors ? { errors: this.errors } : {}),
      ...this.extra,
    };
  }
}

export const badRequest = (detail: string, errors?: FieldError[]) => new Problem(400, detail, { errors });
export const unauthorized = (detail: string) =>
  new Problem(401, detail, { headers: { 'WWW-Authenticate': 'Bearer realm="berth"' } });
export const forbidden = (detail: string) => new Problem(403, detail);
export const notFound = (what: string) => new Problem(404, `${what} not found`);
export const conflict = (detail: string) => new Problem(409, detail);
export const gone = (detail: string) => new Problem(410, detail);
/** A request that is well-formed but breaks a rule of the contract. */
export const unprocessable = (detail: string, errors?: FieldError[]) => new Problem(422, detail, { errors });
export const unavailable = (detail: string, retryAfterSeconds: number) =>
  new Problem(503, detail, { headers: { 'Retry-After': String(retryAfterSeconds) } });
