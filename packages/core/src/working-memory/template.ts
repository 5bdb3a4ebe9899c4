/**
 * The Markdown template used in template mode when none is given: a short user profile.
 */
export const defaultWorkingMemoryTemplate = `# User Information
- **First Name**:
- **Last Name**:
- **Location**:
- **Occupation**:
- **Interests**:
- **Goals**:
- **Events**:
- **Facts**:
- **Projects**:
`;
