// Module declarations for the files the source imports that are not code: the contracts (YAML
// text) and the assets `bun build --compile` embeds in the binary (their paths inside it).
declare module '*.yaml' {
  const text: string;
  export default text;
}

/** A file `bun build --compile` embeds (`with { type: 'file' }`): its path inside the binary. */
declare module '*.gz' {
  const path: string;
  export default path;
}
declare module '*.br' {
  const path: string;
  export default path;
}
declare module '*.asset' {
  const path: string;
  export default path;
}
