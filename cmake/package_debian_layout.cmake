# Run by CPack (CPACK_PRE_BUILD_SCRIPTS) on the staged install tree, before it becomes the
# .deb: what Debian keeps elsewhere than `cmake --install` does.
# - zsh completions: Debian's zsh searches /usr/share/zsh/vendor-completions (and
#   /usr/local/share/zsh/site-functions, where `cmake --install` puts them), not
#   /usr/share/zsh/site-functions.
# - man page and changelog gzip'd with -9n (no name or time stamp: reproducible), policy 12.1.
# - /usr/share/doc/rlock/copyright (policy 12.5) and changelog.gz (a native package's).
# - the binary stripped (even when built with RLOCK_INSTALL_STRIP=OFF) and without .comment
#   and .note, as dh_strip leaves it.
# - lintian's overrides, each with its reason.
set(root "${CPACK_TEMPORARY_INSTALL_DIRECTORY}${CPACK_PACKAGING_INSTALL_PREFIX}")
if(NOT EXISTS "${root}/bin/rlock")
  message(FATAL_ERROR "package layout: no staged ${root}/bin/rlock")
endif()

file(MAKE_DIRECTORY "${root}/share/zsh/vendor-completions")
file(RENAME "${root}/share/zsh/site-functions/_rlock" "${root}/share/zsh/vendor-completions/_rlock")
file(GLOB left "${root}/share/zsh/site-functions/*")
if(NOT left)
  file(REMOVE_RECURSE "${root}/share/zsh/site-functions")
endif()

set(doc "${root}/share/doc/rlock")
file(COPY "${CPACK_RLOCK_DEBIAN_DIR}/copyright" DESTINATION "${doc}"
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
file(COPY "${CPACK_RLOCK_DEBIAN_DIR}/changelog" DESTINATION "${doc}"
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)

execute_process(COMMAND "${CPACK_RLOCK_STRIP}" --remove-section=.comment --remove-section=.note
                        "${root}/bin/rlock" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "package layout: strip of ${root}/bin/rlock failed")
endif()

file(COPY "${CPACK_RLOCK_DEBIAN_DIR}/lintian-overrides" DESTINATION "${root}/share/lintian/overrides"
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
file(RENAME "${root}/share/lintian/overrides/lintian-overrides" "${root}/share/lintian/overrides/rlock")

foreach(file "${root}/share/man/man1/rlock.1" "${doc}/changelog")
  execute_process(COMMAND gzip -9nf "${file}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "package layout: gzip ${file} failed")
  endif()
endforeach()
