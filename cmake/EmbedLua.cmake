# rlock_embed_lua(OUT_VAR files... [INCLUDES helpers...]): generates scripts.cpp defining one
# rlock::redis::Script per lua file (name = file stem), with its SHA1 computed at build time.
set(RLOCK_EMBED_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/embed_lua_run.cmake)

function(rlock_embed_lua out_var)
  cmake_parse_arguments(PARSE_ARGV 1 EMBED "" "" "INCLUDES")
  set(scripts ${EMBED_UNPARSED_ARGUMENTS})
  set(out ${CMAKE_BINARY_DIR}/generated/scripts.cpp)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} "-DFILES=${scripts}" -P ${RLOCK_EMBED_SCRIPT}
    DEPENDS ${scripts} ${EMBED_INCLUDES} ${RLOCK_EMBED_SCRIPT}
    COMMENT "Embedding Lua scripts"
    VERBATIM)
  set(${out_var} ${out} PARENT_SCOPE)
endfunction()
