# rlock_embed_lua(OUT_VAR files... [INCLUDES helpers...]): generates scripts.cpp defining one
# rlock::redis::Script per lua file (name = file stem), with its SHA1 computed at build time,
# and redis/scripts.hpp declaring them (under ${CMAKE_BINARY_DIR}/generated).
set(RLOCK_EMBED_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/embed_lua_run.cmake)

function(rlock_embed_lua out_var)
  cmake_parse_arguments(PARSE_ARGV 1 EMBED "" "" "INCLUDES")
  set(scripts ${EMBED_UNPARSED_ARGUMENTS})
  set(out ${CMAKE_BINARY_DIR}/generated/scripts.cpp)
  set(header ${CMAKE_BINARY_DIR}/generated/redis/scripts.hpp)
  add_custom_command(
    OUTPUT ${out} ${header}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DOUT_HEADER=${header} "-DFILES=${scripts}" -P ${RLOCK_EMBED_SCRIPT}
    DEPENDS ${scripts} ${EMBED_INCLUDES} ${RLOCK_EMBED_SCRIPT}
    COMMENT "Embedding Lua scripts"
    VERBATIM)
  set(${out_var} ${out} ${header} PARENT_SCOPE)
endfunction()
