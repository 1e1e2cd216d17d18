# rlock_embed_lua(OUT_VAR files...): generates scripts.cpp defining one
# rlock::redis::Script per lua file (name = file stem), with its SHA1 computed at build time.
set(RLOCK_EMBED_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/embed_lua_run.cmake)

function(rlock_embed_lua out_var)
  set(out ${CMAKE_BINARY_DIR}/generated/scripts.cpp)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} "-DFILES=${ARGN}" -P ${RLOCK_EMBED_SCRIPT}
    DEPENDS ${ARGN} ${RLOCK_EMBED_SCRIPT}
    COMMENT "Embedding Lua scripts"
    VERBATIM)
  set(${out_var} ${out} PARENT_SCOPE)
endfunction()
