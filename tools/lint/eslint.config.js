// ESLint for the whole tree, run by `npm run lint` (and by .ci/run before the tests).
import js from '@eslint/js'
import globals from 'globals'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  {ignores: ['dist/**', 'node_modules/**', 'tools/lint/node_modules/**', 'docs/examples/*.py']},
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {globals: {...globals.node}},
    rules: {
      // The service finds, rejects and escapes control characters on purpose (input checks, terminal output).
      'no-control-regex': 'off',
      // `_name` marks a parameter a signature needs and the body does not use.
      '@typescript-eslint/no-unused-vars': ['error', {argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none'}],
    },
  },
  {
    // Tests reach into responses and rows whose shape the assertion itself checks.
    files: ['test/**'],
    rules: {'@typescript-eslint/no-explicit-any': 'off', '@typescript-eslint/no-unused-expressions': 'off'},
  },
  {
    // CommonJS configuration files (.mocharc.cjs) load modules with require.
    files: ['**/*.cjs'],
    languageOptions: {sourceType: 'commonjs'},
    rules: {'@typescript-eslint/no-require-imports': 'off'},
  },
)
