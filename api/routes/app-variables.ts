import { variableRoutes } from '../variable-routes';
import { assertChangeable, findApp } from './app-support';

/** An app's variables and secret files (apps:operate or apps:manage). */
export const appVariableRoutes = variableRoutes({
  kind: 'app',
  base: '/apps/{uuid}',
  requires: 'apps.variables',
  find: (ctx) => findApp(ctx, ctx.params.uuid),
  async lockForChange(ctx, m) {
    const app = await findApp(ctx, ctx.params.uuid, m, true);
    assertChangeable(app);
    return app;
  },
  applies: {
    variables: 'they apply at the next deployment, and the app reads needs_redeploy until then',
    files: 'mounted under /etc/secrets/<name>',
  },
});
