/**
 * Loaded into every child process the suite starts (NODE_OPTIONS --import, set by the root
 * hooks), so daemons and commands in processes of their own add what they send to the recording.
 */
import {recordStatements, SQL_RECORD_VARIABLE} from './sql-recorder.js'

const file = process.env[SQL_RECORD_VARIABLE]
if (file) recordStatements(file)
