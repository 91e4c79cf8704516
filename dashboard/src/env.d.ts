// Stylesheets are imported for their effect: esbuild bundles them into the hashed .css asset.
declare module "*.css"
