import { renewalTime } from '../../domain/certificates';
import { publicUrl } from '../../domain/apps';
import { loadConfig } from '../../platform/config';

const DAY = 86_400_000;

describe('certificate renewal time', () => {
  it("renews a 90-day certificate 30 days before it ends (two thirds of its lifetime, as Let's Encrypt advises)", () => {
    const from = new Date('2026-01-01T00:00:00Z');
    const to = new Date(from.getTime() + 90 * DAY);
    expect(renewalTime(from, to).toISOString()).toBe(new Date(to.getTime() - 30 * DAY).toISOString());
  });
});

describe('where apps answer HTTPS', () => {
  it('APP-04 public_url names the HTTPS port unless it is 443', () => {
    expect(publicUrl('web-abc123', 'local.berth.localhost')).toBe('https://web-abc123.local.berth.localhost');
    expect(publicUrl('web-abc123', 'local.berth.localhost', 8443)).toBe(
      'https://web-abc123.local.berth.localhost:8443',
    );
  });

  it('the local driver shows its ingress HTTPS port; BERTH_PUBLIC_HTTPS_PORT overrides it; the simulated driver says 443', () => {
    const local = loadConfig({ BERTH_PROVIDER: 'local', BERTH_INGRESS_TLS_PORT: '9443' });
    expect(local.ingressTlsPort).toBe(9443);
    expect(local.publicHttpsPort).toBe(9443);
    expect(loadConfig({ BERTH_INGRESS_TLS_PORT: '9443', BERTH_PUBLIC_HTTPS_PORT: '443' }).publicHttpsPort).toBe(443);
    expect(loadConfig({ BERTH_PROVIDER: 'simulated' }).publicHttpsPort).toBe(443);
    // 443 needs root; a user gets 8443
    expect(loadConfig({}).ingressTlsPort).toBe(process.getuid?.() === 0 ? 443 : 8443);
  });
});
