import type {CustomFieldDefinition, Stage} from '../../src/customers/customer-types.js'
import type {Column} from '../../src/ui/render.js'

export interface StageOutput {
  id: string
  slug: string
  name: string
  color: string
  position: number
}

export interface FieldOutput {
  slug: string
  name: string
  type: string
  reserved: boolean
}

export function stageOutput(stage: Stage): StageOutput {
  return {id: stage.id, slug: stage.slug, name: stage.name, color: stage.color, position: stage.position}
}

export function fieldOutput(field: CustomFieldDefinition): FieldOutput {
  return {slug: field.slug, name: field.name, type: field.type, reserved: field.reserved}
}

export const STAGE_COLUMNS: ReadonlyArray<Column<StageOutput>> = [
  {header: '#', kind: 'short', value: (s) => String(s.position)},
  {header: 'SLUG', kind: 'id', value: (s) => s.slug},
  {header: 'NAME', value: (s) => s.name},
  {header: 'COLOR', kind: 'short', value: (s) => s.color, color: (s) => s.color},
  {header: 'ID', kind: 'id', value: (s) => s.id},
]

export const FIELD_COLUMNS: ReadonlyArray<Column<FieldOutput>> = [
  {header: 'SLUG', kind: 'id', value: (f) => f.slug},
  {header: 'NAME', value: (f) => f.name},
  {header: 'TYPE', value: (f) => f.type + (f.reserved ? ' (reserved: buyer|seller)' : '')},
]
