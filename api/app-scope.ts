/** The one lookup of the app an `/apps/{uuid}/...` route acts on (api/routes/app-support.ts). */
export { findApp, type FoundApp as AppScope } from './routes/app-support';
